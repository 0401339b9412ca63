//! `nvidia-smi --query-gpu=... --format=csv`: one line per GPU, fields separated by `, `.
//!
//! The probe asks for [`QUERY_GPU_FIELDS`] with `noheader,nounits`, but a header line (with
//! units such as `memory.total [MiB]`) is also understood and then decides the column order, so
//! output of other field lists can be read too. Lines that do not have one field per column are
//! skipped: that is how a driver's error text (`Field "compute_cap" is not a valid field to
//! query.`) ends up as "no rows".

use crate::parse::text::{is_dotted_numeric, leading, present_owned};

/// The `--query-gpu` list whose `noheader,nounits` output [`parse_query_csv`] reads by default.
pub const QUERY_GPU_FIELDS: &str =
    "index,name,uuid,pci.bus_id,driver_version,memory.total,compute_cap";

/// One GPU's line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SmiCsvRow {
    pub index: Option<u32>,
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub pci_bus_id: Option<String>,
    pub driver_version: Option<String>,
    pub memory_total_mib: Option<u64>,
    /// `compute_cap`, e.g. `9.0` (drivers before 510 do not know this field).
    pub compute_capability: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    Index,
    Name,
    Uuid,
    PciBusId,
    DriverVersion,
    MemoryTotal,
    ComputeCap,
}

/// The order of [`QUERY_GPU_FIELDS`].
const DEFAULT_COLUMNS: [Option<Column>; 7] = [
    Some(Column::Index),
    Some(Column::Name),
    Some(Column::Uuid),
    Some(Column::PciBusId),
    Some(Column::DriverVersion),
    Some(Column::MemoryTotal),
    Some(Column::ComputeCap),
];

/// A header field (`memory.total [MiB]`) → the column it names; `None` for fields we do not keep.
fn column_named(field: &str) -> Option<Column> {
    let key = field.split('[').next().unwrap_or(field).trim();
    let column = match key.to_ascii_lowercase().as_str() {
        "index" => Column::Index,
        "name" | "gpu_name" => Column::Name,
        "uuid" | "gpu_uuid" => Column::Uuid,
        "pci.bus_id" | "gpu_bus_id" => Column::PciBusId,
        "driver_version" => Column::DriverVersion,
        "memory.total" => Column::MemoryTotal,
        "compute_cap" => Column::ComputeCap,
        _ => return None,
    };
    Some(column)
}

/// Parses `--query-gpu` CSV output into one row per GPU line.
pub fn parse_query_csv(text: &str) -> Vec<SmiCsvRow> {
    let mut columns: Vec<Option<Column>> = DEFAULT_COLUMNS.to_vec();
    let mut rows = Vec::new();
    let mut first = true;
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if first {
            first = false;
            // A header names fields where a data line has values.
            let is_header = fields.iter().any(|f| column_named(f).is_some());
            if is_header {
                columns = fields.iter().map(|f| column_named(f)).collect();
                continue;
            }
        }
        if fields.len() != columns.len() {
            continue;
        }
        let mut row = SmiCsvRow::default();
        for (column, value) in columns.iter().zip(&fields) {
            match column {
                Some(Column::Index) => row.index = leading(value),
                Some(Column::Name) => row.name = super::xml::product_name(value),
                Some(Column::Uuid) => row.uuid = present_owned(value),
                Some(Column::PciBusId) => row.pci_bus_id = present_owned(value),
                Some(Column::DriverVersion) => row.driver_version = version(value),
                Some(Column::MemoryTotal) => row.memory_total_mib = leading(value),
                Some(Column::ComputeCap) => {
                    row.compute_capability = version(value).filter(|v| v.contains('.'));
                }
                None => {}
            }
        }
        rows.push(row);
    }
    rows
}

/// A version field: dotted numbers only, so a no-value word or an error text is no version.
fn version(value: &str) -> Option<String> {
    present_owned(value).filter(|v| is_dotted_numeric(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::text::testdata::{body, garbage, huge};

    const H200: &str = include_str!("../../../tests/data/h200/smi_csv.txt");

    fn h200_row() -> SmiCsvRow {
        SmiCsvRow {
            index: Some(0),
            name: Some("NVIDIA H200".into()),
            uuid: Some("GPU-93d73297-7074-b467-5b79-c5d039e92c6f".into()),
            pci_bus_id: Some("00000000:00:06.0".into()),
            driver_version: Some("580.159.04".into()),
            memory_total_mib: Some(143771),
            compute_capability: Some("9.0".into()),
        }
    }

    #[test]
    fn h200_capture_with_header_and_units() {
        // The capture asked for a longer list, with a header and units; the header orders it.
        assert_eq!(parse_query_csv(body(H200)), vec![h200_row()]);
    }

    #[test]
    fn noheader_nounits_line() {
        let line = "0, NVIDIA H200, GPU-93d73297-7074-b467-5b79-c5d039e92c6f, 00000000:00:06.0, \
                    580.159.04, 143771, 9.0\n";
        assert_eq!(parse_query_csv(line), vec![h200_row()]);
    }

    #[test]
    fn several_gpus_extra_whitespace_and_na() {
        let text = "\
index, name, uuid, pci.bus_id, driver_version, memory.total [MiB], compute_cap
0,   NVIDIA GeForce RTX 4090 ,GPU-5e1c8a7f-0b2d-4c3e-9f61-7a8b9c0d1e2f, 00000000:01:00.0, 550.54.14, 24564 MiB, 8.9

1, NVIDIA GeForce RTX 3060, [N/A], 00000000:02:00.0, 550.54.14, [N/A], [N/A]
";
        let rows = parse_query_csv(text);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].name.as_deref(), Some("NVIDIA GeForce RTX 4090"));
        assert_eq!(rows[0].memory_total_mib, Some(24564));
        assert_eq!(rows[0].compute_capability.as_deref(), Some("8.9"));
        assert_eq!(rows[1].index, Some(1));
        assert_eq!(rows[1].uuid, None);
        assert_eq!(rows[1].memory_total_mib, None);
        assert_eq!(rows[1].compute_capability, None);
    }

    #[test]
    fn header_decides_the_columns() {
        let text = "timestamp, pci.bus_id, name, memory.total [MiB], fan.speed [%]\n\
                    2026/11/29 21:41:25.123, 00000000:00:06.0, NVIDIA H200, 143771 MiB, [N/A]\n";
        assert_eq!(
            parse_query_csv(text),
            vec![SmiCsvRow {
                pci_bus_id: Some("00000000:00:06.0".into()),
                name: Some("NVIDIA H200".into()),
                memory_total_mib: Some(143771),
                ..SmiCsvRow::default()
            }]
        );
    }

    #[test]
    fn old_driver_rejecting_compute_cap_gives_no_rows() {
        let text = "Field \"compute_cap\" is not a valid field to query.\n\n";
        assert!(parse_query_csv(text).is_empty());
    }

    #[test]
    fn garbage_truncated_and_huge() {
        assert!(parse_query_csv("").is_empty());
        assert!(parse_query_csv(&garbage()).is_empty());
        // Cut in the middle of the row: too few fields, so no row.
        assert!(parse_query_csv("0, NVIDIA H200, GPU-93d73297").is_empty());
        let huge_garbage = huge("no commas here\n");
        assert!(parse_query_csv(&huge_garbage).is_empty());

        let line = "0, NVIDIA H200, GPU-93d73297-7074-b467-5b79-c5d039e92c6f, 00000000:00:06.0, \
                    580.159.04, 143771, 9.0\n";
        let many = huge(line);
        let rows = parse_query_csv(&many);
        assert_eq!(rows.len(), many.len() / line.len());
        assert!(rows.iter().all(|r| *r == h200_row()));
    }

    /// `Graphics Device` is what a driver older than the card calls it: no name.
    #[test]
    fn placeholder_name_is_no_name() {
        let rows =
            parse_query_csv("0, Graphics Device, GPU-1, 00000000:43:00.0, 418.43, 5912, [N/A]\n");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].name, None);
        assert_eq!(rows[0].driver_version.as_deref(), Some("418.43"));
    }
}
