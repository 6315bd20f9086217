"""Sensitive-entity detection (UeDP paper section IV): spaCy NER and Presidio.

An entity is its normalized surface string (:func:`normalize_entity`), so the same name in many
sentences of many users is one entity.
"""

from dptext.detect.categories import CATEGORY_GROUPS, resolve_categories
from dptext.detect.entities import Entity, EntityDetector, detector, normalize_entity

__all__ = ["CATEGORY_GROUPS", "Entity", "EntityDetector", "detector", "normalize_entity",
           "resolve_categories"]
