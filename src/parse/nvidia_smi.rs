//! Parsers for what `nvidia-smi` prints: the `-q -x` XML log, `--query-gpu` CSV, the summary
//! table's header line, and its failure messages.
//!
//! Each output has its own file under `nvidia_smi/`; this module only gathers their public items.

mod failure;
mod query_csv;
mod summary;
mod xml;

pub use failure::{SmiFailure, failure_kind};
pub use query_csv::{QUERY_GPU_FIELDS, SmiCsvRow, parse_query_csv};
pub use summary::parse_summary_table;
pub use xml::{SmiEcc, SmiGpu, SmiLog, SmiXmlError, parse_xml};
