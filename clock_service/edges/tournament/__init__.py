"""The tournament around the table: presets' listing, (later) the draw and results out."""
