"""Fixed word lists of the synthetic-note generator (:mod:`.synth`): clinical look-alikes that
are NOT identifiers (the hard negatives), kinship and role words, section headers, and the
shapes of hospital names. Written for this generator; no outside source."""

from __future__ import annotations

KIN = ("wife", "husband", "daughter", "son", "mother", "father", "sister", "brother",
       "granddaughter", "grandson", "niece", "nephew", "partner", "fiance", "aunt", "uncle",
       "cousin", "mom", "dad", "stepdaughter", "son-in-law", "daughter-in-law", "caregiver",
       "neighbor", "friend", "guardian")
# given names that are also ordinary English words
WORD_NAMES = ("Will", "Hope", "Faith", "Grace", "Rose", "June", "May", "Joy", "Sandy", "Bill",
              "Mark", "Frank", "Art", "Dawn", "Summer", "Amber", "Ruby", "Pearl", "Jack",
              "Guy", "Herb", "Rich", "Angel", "Major", "Drew", "Sky", "Iris", "Lily", "Ivy",
              "Heath", "Chase", "Hunter", "Autumn", "Crystal", "Destiny", "Precious", "Sunny",
              "Buck", "Gay", "Penny", "Misty", "Holly", "Rusty", "Woody", "Faye", "Gene")
WORD_SURNAMES = ("Brown", "White", "Green", "Black", "Young", "King", "Wood", "Stone", "Bell",
                 "Cook", "Hill", "Ward", "Price", "Day", "Cross", "Moss", "Banks", "Lake",
                 "Walker", "Baker", "Hunter", "Rice", "Long", "Short", "Little", "Sharp",
                 "Strong", "Fox", "Wolf", "Hope", "Love", "Small", "Church", "Field", "Frost",
                 "Gay", "Golden", "Hart", "Joy", "Major", "May", "Mills", "Park", "Rose")
SHORT_SURNAMES = ("Li", "Wu", "Ng", "Xu", "Ho", "Le", "Do", "Vo", "Ma", "Yu", "Lo", "Hu", "Ly",
                  "Om", "Oh", "Ko", "Bo", "Au", "Ra", "Ye", "Di", "Su", "Ha", "Ta", "Pu")
ROLES = ("RN", "NP", "PA", "MD", "DO", "LPN", "CNA", "PA-C", "RT", "PT", "OT", "CRNA", "APRN",
         "MSW", "PharmD", "RD", "DPM")
ROLE_LINES = ("Triage RN", "Attending:", "Dictated by:", "Signed by:", "Resident:",
              "Primary RN:", "Charge RN", "Electronically signed by", "cc:", "PCP:",
              "Referring physician:", "Consulting:", "Reviewed by", "Transcribed by:",
              "Seen with", "Discussed with", "Case manager:", "SW:", "Fellow:", "Covering:")
HEADERS = ("ADMISSION DATE:", "DISCHARGE DATE:", "HISTORY OF PRESENT ILLNESS:",
           "PAST MEDICAL HISTORY:", "MEDICATIONS:", "ALLERGIES:", "SOCIAL HISTORY:",
           "FAMILY HISTORY:", "REVIEW OF SYSTEMS:", "PHYSICAL EXAM:", "ASSESSMENT AND PLAN:",
           "HOSPITAL COURSE:", "DISCHARGE MEDICATIONS:", "FOLLOW UP:", "DISPOSITION:",
           "CHIEF COMPLAINT:", "IMPRESSION:", "FINDINGS:", "COMPARISON:", "TECHNIQUE:",
           "LABS:", "VITALS:", "PLAN:", "DATE OF SERVICE:", "DATE OF BIRTH:", "CONDITION:",
           "PROCEDURES:", "DIAGNOSES:", "RECOMMENDATIONS:", "SUBJECTIVE:", "OBJECTIVE:")
EPONYMS = ("Crohn's disease", "Bell's palsy", "Parkinson's disease", "Homans sign",
           "Babinski sign", "Murphy's sign", "Hashimoto's thyroiditis", "Alzheimer's dementia",
           "Graves' disease", "Cushing's syndrome", "Addison's disease", "Hodgkin lymphoma",
           "Down syndrome", "Tourette syndrome", "Guillain-Barre syndrome", "Raynaud's",
           "Barrett's esophagus", "Kaposi sarcoma", "Wilms tumor", "Foley catheter",
           "Swan-Ganz catheter", "Glasgow Coma Scale", "Apgar score", "Whipple procedure",
           "Nissen fundoplication", "Kussmaul respirations", "Cheyne-Stokes breathing",
           "Virchow's node", "Osler nodes", "Janeway lesions", "McBurney's point",
           "Romberg test", "Lachman test", "Tinel's sign", "Phalen's test", "Valsalva",
           "Epley maneuver", "Dix-Hallpike", "Sjogren's syndrome", "Meniere's disease",
           "Paget's disease", "Wernicke encephalopathy", "Korsakoff syndrome", "Lyme disease",
           "Huntington's disease", "Marfan syndrome", "Turner syndrome", "Wolff-Parkinson-White",
           "Brugada pattern", "Mallory-Weiss tear", "Zenker's diverticulum", "Hirschsprung",
           "Kawasaki disease", "Stevens-Johnson syndrome", "Reye syndrome", "Addisonian crisis",
           "Bell palsy", "Lou Gehrig's disease", "Ewing sarcoma", "Burkitt lymphoma",
           "Austin Flint murmur", "Brudzinski sign", "Kernig sign", "Colles fracture",
           "Dupuytren contracture", "Trousseau sign", "Chvostek sign", "Horner syndrome",
           "Bence Jones protein", "Charcot foot", "Baker's cyst", "Boerhaave syndrome",
           "Cullen sign", "Grey Turner sign", "Kehr sign", "Levine sign", "Beck's triad",
           "Fournier gangrene", "Ludwig angina", "Bartholin cyst", "Morton neuroma",
           "Osgood-Schlatter", "Legg-Calve-Perthes", "Peyronie's disease", "Wegener's",
           "Still's disease", "Sheehan syndrome", "Conn syndrome", "Budd-Chiari",
           "Dressler syndrome", "Prinzmetal angina", "Todd's paralysis", "Jones criteria")
DRUGS = ("metoprolol", "lisinopril", "atorvastatin", "metformin", "insulin glargine",
         "apixaban", "warfarin", "furosemide", "Lasix", "Keppra", "Zofran", "Norco", "Ativan",
         "Haldol", "Xarelto", "Eliquis", "amlodipine", "levothyroxine", "gabapentin",
         "prednisone", "vancomycin", "piperacillin-tazobactam", "ceftriaxone", "heparin",
         "enoxaparin", "pantoprazole", "ondansetron", "acetaminophen", "ibuprofen",
         "oxycodone", "morphine", "lorazepam", "sertraline", "tamsulosin", "albuterol",
         "Tylenol", "Coumadin", "Plavix", "aspirin", "Lovenox", "Protonix", "Seroquel")
UNITS = ("mg", "mcg", "g", "units", "mL", "mEq", "mg/kg")
FREQS = ("PO BID", "PO daily", "IV q8h", "PO TID", "q6h PRN", "qHS", "PO q4h PRN pain",
         "IV once", "SQ daily", "PO QID", "nightly", "q12h")
LABS = ("Na", "K", "Cl", "HCO3", "BUN", "Cr", "Glu", "Hgb", "Hct", "WBC", "Plt", "INR",
        "PTT", "AST", "ALT", "Alk phos", "T bili", "Lipase", "Trop", "BNP", "A1c", "TSH",
        "Mg", "Phos", "Lactate", "CRP", "ESR", "Ca", "Alb", "LDL")
ICD = ("I48.91", "E11.65", "J44.1", "Z79.4", "I10", "N18.3", "E78.5", "K50.90", "F32.9",
       "J18.9", "N39.0", "I50.22", "M54.5", "G40.909", "E03.9", "R07.9", "Z95.1", "K21.9",
       "C34.90", "D64.9", "I25.10", "J45.909", "E66.01", "G47.33", "R55", "S72.001A")
CPT = ("99213", "99214", "93000", "71046", "80053", "85025", "36415", "99285", "G0439")
HOSPITAL_SHAPES = ("{city} General Hospital", "St. {first}'s Medical Center",
                   "{last} Memorial Hospital", "{city} Community Health Center",
                   "University of {city} Medical Center", "{last} Family Clinic",
                   "{city} Regional Medical Center", "{last} Orthopedic Associates",
                   "Mercy {city} Hospital", "{city} Children's Hospital",
                   "{last} & {last2} Pediatrics", "{city} Urgent Care", "{last} Cardiology Group",
                   "{city} VA Medical Center", "{last} Rehabilitation Center",
                   "{city} Dialysis Unit", "Good Samaritan Hospital of {city}",
                   "{last} Nursing Home", "{city} Women's Clinic", "{last} Health System",
                   "{city} Behavioral Health", "{last} Eye Institute")
STATES = ("AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL", "IN",
          "IA", "KS", "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV",
          "NH", "NJ", "NM", "NY", "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN",
          "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
NURSING = ("resting comfortably", "denies pain", "c/o nausea", "ambulating w/ walker",
           "tolerating po", "voiding qs", "afebrile", "a&ox3", "on 2L nc", "skin intact",
           "ivf infusing", "call light in reach", "fall precautions maintained",
           "dsg c/d/i", "bs 142 ac", "lungs clear bilat", "+bs x4", "no acute distress",
           "refused meds", "med'd for pain", "turned q2h", "family at bedside")
CLINICAL = ("Patient presents with chest pain radiating to the left arm.",
            "No fever, chills or night sweats.", "Lungs clear to auscultation bilaterally.",
            "Regular rate and rhythm, no murmurs.", "Abdomen soft, nontender, nondistended.",
            "Plan to continue current management and reassess in the morning.",
            "Discussed risks and benefits; patient agrees with the plan.",
            "CT of the abdomen showed no acute process.", "EKG with normal sinus rhythm.",
            "Will follow up with cardiology as an outpatient.",
            "Tolerating a regular diet.", "Pain controlled on oral medication.",
            "Strength 5/5 in all extremities.", "2+ pitting edema bilateral lower extremities.",
            "Grade 2/6 systolic murmur at the left sternal border.", "Pain 7/10, sharp.",
            "Wound healing well without erythema.", "Neuro exam nonfocal.",
            "Chest x-ray with mild vascular congestion.", "No acute distress.")
VITALS = ("BP {a}/{b}", "BP {a}/{b} mmHg", "HR {c}", "HR: {c}", "P {c}", "pulse {c}",
          "RR {r}", "T {t}", "Temp {f} F", "T {t}C", "SpO2 {o}%", "O2 sat {o}%", "SpO2 {o}% RA",
          "sat {o}% on 2L", "Wt {w} kg", "wt {w}kg", "BMI {bmi}", "Ht {h} cm", "GCS {g}",
          "pain {p}/10", "FSBG {gl}", "bs {gl}", "MAP {c}", "CVP {p}")
LAB_LINE = ("eGFR {c}", "BUN {r}", "Na {na}", "K {k}", "plt {plt}", "Hgb {hb}", "WBC {wbc}",
            "A1c {a1c}%", "Mg {mg}", "LDL {ldl}", "TSH {tsh}", "BNP {bnp}", "Cr {cr}",
            "INR {inr}", "lactate {mg}", "trop {tsh}", "Glu {gl}", "Alb {mg}")
CHAINS = ("CVS", "Walgreens", "Rite Aid", "Walmart", "Costco", "UPS", "FedEx", "Amazon",
          "Target", "Home Depot", "Kroger", "Safeway", "Starbucks", "the post office",
          "the county sheriff's office", "the school district", "Boeing", "Tyson Foods")
FACILITY_STREETS = ("Medical Plaza Dr", "Health Pkwy", "Hospital Way", "Medical Center Blvd",
                    "Clinic Rd", "Wellness Way", "Healthcare Dr", "Physicians Pkwy",
                    "Campus Dr", "Professional Pkwy")
CONSULTS = ("consult", "consulted", "paged", "d/w", "discussed w/", "signed out to", "called")
