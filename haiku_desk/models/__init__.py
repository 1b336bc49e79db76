"""Qt item models over service state (no store access)."""
