"""The kit's version, on the ground floor: modules that record it (reports, cards, provenance)
import it from here, never from the package root (which imports them)."""

__version__ = "0.1.0"
