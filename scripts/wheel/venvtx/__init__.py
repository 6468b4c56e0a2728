"""venvtx: every change to a Python venv as a transaction. This package only finds the venvtx
binary that its wheel installed among the scripts (`python -m venvtx` runs it)."""
