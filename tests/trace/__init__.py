"""Reading traces: each format's reader, their bounds against hostile input, fuzzing, rank files."""
