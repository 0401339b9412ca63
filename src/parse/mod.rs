//! Pure text parsers for what GPU machines print and store. No I/O here: callers pass text in.
