//! Parsers for what `nvidia-smi` prints: the `-q -x` XML log and the `--query-gpu` CSV.
//!
//! Each output has its own file under `nvidia_smi/`; this module only gathers their public items.

mod query_csv;
mod xml;

pub use query_csv::{QUERY_GPU_FIELDS, SmiCsvRow, parse_query_csv};
pub use xml::{SmiEcc, SmiGpu, SmiLog, SmiXmlError, parse_xml};
