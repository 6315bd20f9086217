"""The note styles of the synthetic generator (:mod:`.synth`): each writes one note into a
:class:`~dptext.detect.learned.synth.Note` with its identifiers labelled."""

from __future__ import annotations

from dptext.detect.learned import vocab as V


def discharge(g, n) -> None:
    n.add(g.pick(("DISCHARGE SUMMARY", "Discharge Summary", "DISCHARGE NOTE")) + "\n")
    n.add(g.pick(("PATIENT NAME: ", "Patient Name: ", "NAME: ", "Patient: ")))
    g.person(n, g.pick(("lf", "fl", "fml")), lower=0.05)
    n.add(g.pick(("\nMRN: ", "\nMR#: ", "\nMedical Record #: ", "   MRN ")))
    n.add(g.ident(), "ID_NUMBER")
    n.add(g.pick(("\nADMISSION DATE: ", "\nAdmission Date: ", "\nDATE OF ADMISSION: ")))
    n.add(g.date(), "DATE")
    n.add(g.pick(("\nDISCHARGE DATE: ", "\nDischarge Date: ", "   DISCHARGE DATE: ")))
    n.add(g.date(), "DATE")
    n.add("\nATTENDING: " if g.r() < 0.5 else "\nAttending physician: ")
    g.doctor(n)
    n.add("\n\n" + g.pick(V.HEADERS) + "\n")
    n.add(g.pick(("The patient is a ", "Pt is a ", "This is a ", "Mr. ", "Ms. ")))
    if n.parts[-1] in ("Mr. ", "Ms. "):
        g.person(n, "l")
        n.add(" is a ")
    n.add(g.age(), "AGE")
    n.add(g.pick((" male", " female", " man", " woman", " M", " F")) + " with history of ")
    n.add(g.pick(V.EPONYMS) + " admitted to ")
    n.add(g.org(), "ORG")
    n.add(" on ")
    n.add(g.date(), "DATE")
    n.add(". ")
    g.sentences(n, 2 + int(g.rng.integers(4)))
    n.add("\n" + g.pick(V.HEADERS) + "\n")
    g.sentences(n, 2 + int(g.rng.integers(3)))
    if g.r() < 0.5:
        n.add(f"\n{g.pick(V.HEADERS)}\nFollow up with ")
        g.doctor(n)
        n.add(" at ")
        n.add(g.org(), "ORG")
        n.add(g.pick((" in 2 weeks", " on ", " phone ", " ")))
        if n.parts[-1] == " ":
            n.add(g.phone(), "PHONE_NUMBER")
        if n.parts[-1] == " on ":
            n.add(g.date(), "DATE")
        elif n.parts[-1] == " phone ":
            n.add(g.phone(), "PHONE_NUMBER")
        n.add(".")
    n.add("\n" + g.pick(("Dictated by: ", "Electronically signed by ", "Signed: ")))
    g.doctor(n)
    n.add(" " + g.pick(("on ", "", "at 14:32 on ")))
    n.add(g.date(), "DATE")


def nursing(g, n) -> None:
    lower = 0.7
    n.add(g.pick(("", "nsg note ", "rn note: ", "0700-1900: ", "nursing: ")))
    n.add(g.pick(("pt ", "pt ", "patient ", "pt. ")))
    g.person(n, g.pick(("f", "f", "fl", "l")), lower=lower)
    n.add(" ")
    g.sentences(n, 1 + int(g.rng.integers(3)), lower=True)
    n.add(g.pick(("pt's ", "", "pts ")))
    g.kin(n, lower=0.5)
    n.add(g.pick((" at bedside. ", " called, updated. ", " visiting, ", " notified. ",
                  " @ bedside, questions answered. ")))
    g.sentences(n, 1 + int(g.rng.integers(3)), lower=True)
    if g.r() < 0.5:
        n.add("per ")
        g.person(n, g.pick(("f", "iL", "l")), lower=0.5)
        n.add(" " + g.pick(V.ROLES).lower() + ", ")
    if g.r() < 0.4:
        n.add("dc planning: home w/ " + g.pick(V.KIN) + " to ")
        g.address(n, lower=0.6)
        n.add(". ")
    if g.r() < 0.5:
        n.add(g.vitals(3).lower() + ". ")
        g.person(n, g.pick(("f", "f", "fl")), lower=0.8)
        n.add(g.pick((" c/o nausea. ", " resting. ", " c/o sob on exertion. ", " ok'd plan. ")))
    if g.r() < 0.3:
        n.add(g.pick(("pt lives at ", "Pt lives at ", "home: ")))
        g.address(n, lower=0.7)
        n.add(". ")
    if g.r() < 0.3:
        n.add(g.pick(("plan d/c ", "f/u ", "labs due ")))
        n.add(g.pick((f"the {int(g.rng.integers(1, 29))}th", g.date())), "DATE")
        n.add(" if tolerating. ")
    g.sentences(n, 1, lower=True)
    n.add(g.pick(("-", "--", "/")) + g.pick(("", " ")))
    g.person(n, g.pick(("iL", "f", "fl")), lower=0.4)
    n.add(" " + g.pick(V.ROLES))


def keyvalue(g, n) -> None:
    sep = g.pick(("   ", "\t", "\n", " | ", "  "))
    n.add(g.pick(("Patient: ", "Name: ", "PATIENT: ", "Pt Name: ", "Patient Name:")))
    g.person(n, g.pick(("fl", "lf", "fml", "fl")), lower=0.05)
    n.add(sep + g.pick(("DOB: ", "D.O.B.: ", "Date of Birth: ", "DOB ")))
    n.add(g.date(), "DATE")
    n.add(sep + g.pick(("MRN: ", "MRN ", "Acct #: ", "Account: ", "SSN: ", "Member ID: ")))
    n.add(g.ident(), "ID_NUMBER")
    n.add(sep)
    g.age_bare(n)
    n.add(sep + g.pick(("Sex: F", "Sex: M", "Gender: Female", "Gender: Male")))
    n.add(sep + g.pick(("Phone: ", "Tel: ", "Home phone: ", "Cell: ")))
    n.add(g.phone(), "PHONE_NUMBER")
    if g.r() < 0.6:
        n.add(sep + "Address: ")
        g.address(n, lower=0.1)
    if g.r() < 0.5:
        n.add(sep + g.pick(("Email: ", "E-mail: ")))
        n.add(g.email(), "EMAIL_ADDRESS")
    n.add(sep + g.pick(("PCP: ", "Provider: ", "Referring: ", "Attending: ")))
    g.doctor(n)
    n.add(sep + g.pick(("Facility: ", "Location: ", "Clinic: ")))
    n.add(g.org(), "ORG")
    n.add(sep + g.pick(("Visit date: ", "Date of service: ", "DOS: ")))
    n.add(g.date(), "DATE")
    n.add(sep + g.pick(("Emergency contact: ", "Next of kin: ", "Contact: ")))
    g.person(n, "fl")
    n.add(" (" + g.pick(V.KIN) + ") ")
    n.add(g.phone(), "PHONE_NUMBER")
    for _ in range(int(g.rng.integers(3))):
        n.add(sep)
        g.id_line(n)
    n.add("\n")
    g.sentences(n, 2 + int(g.rng.integers(3)))
    if g.r() < 0.4:
        portal(g, n)


def table(g, n) -> None:
    csv = g.r() < 0.5
    if csv:
        n.add(g.pick(("name,dob,mrn,phone,dx\n", "Last,First,DOB,MRN,Phone,Diagnosis\n",
                      "patient;date;id;icd\n")))
        for _ in range(2 + int(g.rng.integers(4))):
            la, f = g.last(), g.first()
            if g.r() < 0.5:
                n.add(la, "PERSON").add(",").add(f, "PERSON")
            else:
                n.add('"').add(f"{la}, {f}", "PERSON").add('"')
            n.add(",").add(g.date(), "DATE").add(",").add(g.ident(), "ID_NUMBER").add(",")
            n.add(g.phone(), "PHONE_NUMBER").add(",")
            n.add(g.pick(V.ICD) if g.r() < 0.5 else g.pick(V.EPONYMS)).add("\n")
        return
    n.add("| Patient | DOB | MRN | Provider | Notes |\n|---|---|---|---|---|\n")
    for _ in range(2 + int(g.rng.integers(4))):
        n.add("| ")
        g.person(n, g.pick(("lf", "fl", "lf")), lower=0.05)
        n.add(" | ").add(g.date(), "DATE").add(" | ").add(g.ident(), "ID_NUMBER").add(" | ")
        g.doctor(n)
        n.add(" | " + g.clinical() + " |\n")


def telephone(g, n) -> None:
    n.add(g.pick(("Telephone encounter ", "TELEPHONE ENCOUNTER\nDate: ", "Phone call ",
                  "TELEPHONE ENCOUNTER  ")))
    g.date_time(n)
    n.add(g.pick((" ", ". ", "\nCaller: ")))
    n.add(g.pick(("Spoke with ", "Received call from ", "Called ", "LM for ")))
    if g.r() < 0.5:
        n.add(g.pick(("pt's ", "patient's ", "the ")) + g.pick(V.KIN) + " ")
    g.person(n, g.pick(("fl", "f", "fl")), lower=0.15)
    n.add(g.pick((" at ", " on ", " ph ", " (cell) ")))
    n.add(g.phone(), "PHONE_NUMBER")
    n.add(". ")
    g.sentences(n, 1 + int(g.rng.integers(3)))
    n.add(g.pick(("Callback number ", "Best # ", "Please call back at ")))
    n.add(g.phone(), "PHONE_NUMBER")
    n.add(g.pick((". ", "\n")) + g.pick(("Routed to ", "Message sent to ", "FYI ")))
    g.doctor(n)
    n.add(". ")
    n.add(g.pick(("- ", "Call taken by ")))
    g.person(n, "iL")
    n.add(", " + g.pick(V.ROLES))


def referral(g, n) -> None:
    n.add(g.org(), "ORG")
    n.add(g.pick(("\n", "  ")))
    g.address(n, oneline=g.r() < 0.4)
    n.add("\n")
    if g.r() < 0.5:
        n.add("Tel ").add(g.phone(), "PHONE_NUMBER").add("  Fax ").add(g.phone(), "PHONE_NUMBER")
        n.add("\n")
    n.add(g.date(), "DATE")
    n.add("\n\nDear " + g.pick(("Dr. ", "Dr ", "Doctor ")))
    g.person(n, g.pick(("l", "fl")))
    n.add(",\n\nThank you for seeing ")
    g.person(n, g.pick(("fl", "fml")))
    n.add(", a ")
    n.add(g.age(), "AGE")
    n.add(g.pick((" gentleman", " lady", " patient", " boy", " girl")) + " who lives in ")
    n.add(g.pick(g.p.cities), "GPE")
    n.add(" with " + g.pick(("her ", "his ")))
    g.kin(n, lower=0.0)
    n.add(". ")
    g.sentences(n, 2 + int(g.rng.integers(3)))
    n.add("Records from ")
    n.add(g.org(), "ORG")
    n.add(" are available at ")
    n.add(g.url(), "URL")
    n.add(" or by email to ")
    n.add(g.email(), "EMAIL_ADDRESS")
    n.add(".\n\n" + g.pick(("Sincerely,\n", "Kind regards,\n", "Yours sincerely,\n")))
    g.doctor(n)
    n.add("\n")
    n.add(g.org(), "ORG")


def triage(g, n) -> None:
    n.add(g.pick(("ED TRIAGE ", "ED Triage Note ", "TRIAGE  Arrival ")))
    g.date_time(n)
    n.add("\n")
    n.add(g.pick(("Triage RN ", "Triage nurse: ", "RN ")))
    g.person(n, g.pick(("iL", "fl", "l", "f")))
    n.add("\n")
    if g.r() < 0.5:
        n.add("Pt: ")
        g.person(n, "lf", lower=0.0)
        n.add("  ")
        n.add(str(int(g.rng.integers(1, 104))) + g.pick(("yoF", "yoM", "M", "F", " yo")), "AGE")
        n.add("  MRN ").add(g.ident(), "ID_NUMBER").add("\n")
    if g.r() < 0.5:
        n.add(g.age(), "AGE")
        n.add(g.pick((" M", " F", " male", " female")))
    else:
        g.age_bare(n)
    n.add(g.pick((" BIBA from ", " walk-in from ", " transferred from ")))
    n.add(g.org(), "ORG") if g.r() < 0.5 else n.add(g.pick(g.p.cities), "GPE")
    n.add(". CC: " + g.pick(("chest pain", "SOB", "fall", "abd pain", "syncope")) + ". ")
    n.add(g.clinical() + ". ")
    n.add(g.pick(("Accompanied by ", "w/ ", "Here with ")))
    g.kin(n)
    n.add(". ESI " + str(int(g.rng.integers(1, 6))) + ". ")
    if g.r() < 0.4:
        n.add(g.pick(("Transport by ", "Brought in by ", "Ride home with ")))
        n.add(g.pick(V.KIN) + " (")
        g.person(n, "fl")
        n.add(").\n")
    n.add(g.pick(("Dr. ", "MD ")))
    g.person(n, "l")
    n.add(" notified.")


def radiology(g, n) -> None:
    n.add(g.pick(("EXAM: ", "Exam: ")) + g.pick(("CT chest with contrast", "MRI brain",
                                                  "CXR PA/lat", "US abdomen", "XR CHEST 2 VIEWS",
                                                  "CT PELVIS W CONTRAST")))
    n.add(g.pick(("", f"  CPT {g.pick(V.CPT)}", f"  CPT {g.rng.integers(10000, 99999)}")) + "\n")
    n.add("DATE: ").add(g.date(), "DATE").add("\nPATIENT: ")
    g.person(n, "lf")
    n.add("  ACC#: ").add(g.ident(), "ID_NUMBER")
    n.add("\nCOMPARISON: ").add(g.date(), "DATE").add(" at ")
    n.add(g.org(), "ORG")
    n.add("\nFINDINGS: ")
    g.sentences(n, 2)
    if g.r() < 0.4:
        n.add("\n")
        g.id_line(n)
    n.add("\nIMPRESSION: No acute findings.\nRead by: ")
    g.doctor(n)
    n.add(" " + g.pick(("", "on ")))
    n.add(g.date(), "DATE")


def billing(g, n) -> None:
    n.add("BILLING FORM\nInsured: ")
    g.person(n, g.pick(("lf", "fl")), lower=0.0)
    n.add("\nPolicy #: ").add(g.ident(), "ID_NUMBER")
    n.add("\nGroup: ").add(g.ident(), "ID_NUMBER")
    n.add("\nEmployer: ").add(g.pick(g.p.companies), "ORG")
    n.add("\nAddress: ")
    g.address(n, lower=0.1)
    n.add("\nSSN: ").add(f"{g.digits(3)}-{g.digits(2)}-{g.digits(4)}", "ID_NUMBER")
    for _ in range(int(g.rng.integers(1, 4))):
        n.add("\n")
        g.id_line(n)
    n.add("\nDx codes: " + ", ".join(g.pick(V.ICD) for _ in range(3)))
    n.add("\nCPT: " + g.pick(V.CPT) + "  Units: " + str(int(g.rng.integers(1, 5))))
    n.add("\nDate of service: ").add(g.date(), "DATE")
    n.add("\nDOS        CPT     ICD      UNITS  CHARGE")
    for _ in range(int(g.rng.integers(1, 4))):
        n.add("\n").add(g.date(), "DATE").add(g.codes_row())
    n.add("\nAmount: $" + str(int(g.rng.integers(20, 900))) + ".00\n")


def progress(g, n) -> None:
    n.add(g.pick(("Progress Note\n", "PROGRESS NOTE - ", "S: ", "Subjective: ")))
    if g.r() < 0.3:
        n.add(str(int(g.rng.integers(1, 104))) + g.pick((" yo", "M", "F", "yoF", " y/o")), "AGE")
        n.add(g.pick((" with hypertension. ", " with chest pain. ", " with CHF. ")))
    if g.r() < 0.5:
        n.add(g.date(), "DATE")
        n.add("\n")
    g.person(n, g.pick(("fl", "f", "l")), lower=0.1)
    n.add(g.pick((" is doing better today. ", " seen and examined. ", " c/o headache. ")))
    g.sentences(n, 2 + int(g.rng.integers(3)))
    n.add(g.pick(("Her ", "His ", "The ")))
    g.kin(n)
    n.add(g.pick((" was updated", " asked about discharge", " will pick up at ")))
    if n.parts[-1] == " will pick up at ":
        n.add(f"{int(g.rng.integers(1, 12))} pm")
    n.add(". ")
    g.again(n)
    n.add(g.pick((" reports feeling better", " denies dizziness", " agrees with plan")))
    n.add(". Last seen on ").add(g.date(), "DATE").add(" by ")
    g.doctor(n)
    n.add(g.pick((". Lives in ", ". Moved from ", ". From ", ". Lives alone in ")))
    n.add(g.case(g.pick(g.p.cities), 0.2, 0.1), "GPE")
    if g.r() < 0.5:
        n.add(", ").add(g.pick(V.STATES), "GPE")
    n.add(g.pick((". Works at ", ". works at ", ". Pharmacy: ", ". Employer: ")))
    x = g.r()
    n.add(g.pick(V.CHAINS) if x < 0.35 else g.pick(g.p.companies) if x < 0.7 else g.org(),
          "ORG")
    n.add(". ")
    g.sentences(n, 1 + int(g.rng.integers(2)))
    if g.r() < 0.5:
        n.add(g.pick(V.CONSULTS) + " ")
        g.person(n, g.pick(("iL", "l", "fl")))
        n.add(" re " + g.pick(V.EPONYMS) + ". ")
    if g.r() < 0.4:
        n.add(g.pick(("Authorization obtained ", "Prior auth approved ", "Referral sent ")))
        n.add(g.date(), "DATE").add(" by ")
        g.person(n, g.pick(("iL", "fl")))
        n.add(", " + g.pick(("ref ", "ref# ", "auth ", "case ")))
        n.add(g.ident(), "ID_NUMBER").add(". ")
    if g.r() < 0.3:
        n.add(g.pick(("comment: ", "note: ", "")))
        g.person(n, g.pick(("l", "f")), lower=0.5)
        n.add(" called ")
        n.add(g.pick((g.date(), f"the {int(g.rng.integers(1, 29))}th")), "DATE")
        n.add("; ")
        g.kin(n) if g.r() < 0.5 else None
        n.add(" to call back. ")
    n.add("Seen with ")
    g.person(n, "iL")
    n.add(" " + g.pick(V.ROLES) + ".")


def contacts(g, n) -> None:
    """Contact lines: name then kinship in brackets, native-script names, signatures."""
    n.add(g.pick(("Contacts:\n", "FAMILY / CONTACTS\n", "Emergency contacts\n", "")))
    for _ in range(1 + int(g.rng.integers(3))):
        g.person(n, g.pick(("fl", "fl", "lf", "f")))
        n.add(" (" + g.pick(V.KIN) + ")" + g.pick(("  ", " ", ", ")))
        n.add(g.pick(("Call back #: ", "ph ", "", "cell ")))
        n.add(g.phone(), "PHONE_NUMBER")
        n.add("\n")
    if g.r() < 0.4 and g.p.other_script:
        n.add(g.pick(("Name (native script): ", "Name in Chinese: ", "Local name: ")))
        n.add(g.pick(g.p.other_script), "PERSON")
        n.add("\n")
    n.add(g.pick(("Discussed with ", "Discussed wiht ", "Per ", "Spoke w/ ")))
    g.person(n, g.pick(("f", "fl", "iL")))
    n.add(g.pick((".", " by telephone.", ", who agrees.")) + "\n\n")
    g.person(n, g.pick(("iL", "fl")))
    n.add(g.pick(("\n", ", RN\n", "\n" + g.pick(V.ROLES) + "\n")))


def clinical_only(g, n) -> None:
    n.add(g.pick(V.HEADERS) + "\n")
    for i in range(int(g.rng.integers(0, 4))):
        n.add(f"{i + 1}. " + g.pick(("right knee OA", "gestational diabetes", "sepsis", "GERD",
                                    "CHF exacerbation", g.pick(V.EPONYMS), "fever", "AKI")))
        n.add(g.pick((" - ", " (", " ")) + g.pick(V.ICD))
        n.add(")\n" if n.parts[-2] == " (" else "\n")
    g.sentences(n, 3 + int(g.rng.integers(4)), lower=g.r() < 0.3)


def portal(g, n) -> None:
    n.add(g.pick(("Portal: ", "Patient portal ", "Web: ", "Online record ")))
    n.add(g.url(), "URL")
    n.add(g.pick(("  (last login from ", " via IP ", " from ")))
    n.add(g.ip(), "IP_ADDRESS")
    n.add(g.pick((")", ".", "")) + "\n")
    if g.r() < 0.5:
        g.id_line(n)
        n.add(g.pick((" on file.", "; ", "\n")))


STYLES = (discharge, nursing, keyvalue, table, telephone, referral, triage, radiology, billing,
          progress, clinical_only, contacts)
