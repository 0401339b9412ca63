//! Parsers for what `nvidia-smi` prints: the `-q -x` XML log, the `--query-gpu` CSV and the
//! `topo -m` matrix.
//!
//! Each output has its own file under `nvidia_smi/`; this module only gathers their public items.

mod query_csv;
mod topo;
mod xml;

pub use query_csv::{QUERY_GPU_FIELDS, SmiCsvRow, parse_query_csv};
pub use topo::parse_topo;
pub use xml::{SmiEcc, SmiGpu, SmiLog, SmiXmlError, parse_xml};
