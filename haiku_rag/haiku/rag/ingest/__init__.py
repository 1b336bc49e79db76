"""Sources -> converters -> DoclingDocument -> items and chunks (with page geometry)."""
