"""The hands: one adapter per agent CLI behind one small interface (see ``base``)."""
