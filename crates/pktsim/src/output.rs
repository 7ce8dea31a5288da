//! TEMPORARY STUB: replaced by the output writer on merge.
