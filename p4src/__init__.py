"""The card program (``card.p4``, shipped as package data) and its interface in Python."""

from pathlib import Path

#: The card program every card runs.
CARD_PROGRAM = Path(__file__).resolve().parent / "card.p4"
