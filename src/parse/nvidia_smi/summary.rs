//! The header line of the plain `nvidia-smi` table:
//! `| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |`.
//!
//! The same `Driver Version` / `CUDA Version` labels (with padding before the colon) appear in
//! `nvidia-smi -q`, so that output is read too.

use crate::parse::text::is_dotted_numeric;

/// `(driver version, CUDA version)` from the table's header. The CUDA version is the newest the
/// driver supports; drivers before 410 do not print it.
///
/// On WSL the `Driver Version` is the Windows driver's (e.g. `537.13`), which differs from the
/// `NVIDIA-SMI` version beside it.
pub fn parse_summary_table(text: &str) -> (Option<String>, Option<String>) {
    (
        labelled_version(text, "Driver Version"),
        labelled_version(text, "CUDA Version"),
    )
}

/// The version-looking token after the first `label` followed by `:`.
fn labelled_version(text: &str, label: &str) -> Option<String> {
    let mut rest = text;
    while let Some(pos) = rest.find(label) {
        rest = rest.get(pos + label.len()..)?;
        let Some(after_colon) = rest.trim_start_matches([' ', '\t']).strip_prefix(':') else {
            continue;
        };
        let value = after_colon
            .trim_start_matches([' ', '\t'])
            .split(|c: char| c.is_whitespace() || c == '|')
            .next()?;
        return is_dotted_numeric(value).then(|| value.to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::text::testdata::{body, garbage, huge};

    const H200: &str = include_str!("../../../tests/data/h200/smi.txt");
    const H200_Q: &str = include_str!("../../../tests/data/h200/smi_q.txt");

    fn some(driver: &str, cuda: &str) -> (Option<String>, Option<String>) {
        (Some(driver.to_string()), Some(cuda.to_string()))
    }

    #[test]
    fn h200_table_and_q() {
        assert_eq!(parse_summary_table(body(H200)), some("580.159.04", "13.0"));
        assert_eq!(
            parse_summary_table(body(H200_Q)),
            some("580.159.04", "13.0")
        );
    }

    #[test]
    fn other_generations() {
        let r418 = "+-----------------------------------------------------------------------------+\n\
                    | NVIDIA-SMI 418.67       Driver Version: 418.67       CUDA Version: 10.1     |\n";
        assert_eq!(parse_summary_table(r418), some("418.67", "10.1"));

        // Before 410 there is no CUDA version in the header.
        let r390 =
            "| NVIDIA-SMI 390.116                Driver Version: 390.116                   |\n";
        assert_eq!(
            parse_summary_table(r390),
            (Some("390.116".to_string()), None)
        );

        // WSL: nvidia-smi's own version differs from the Windows driver's.
        let wsl = "| NVIDIA-SMI 535.104.05             Driver Version: 537.13       CUDA Version: 12.2     |\n";
        assert_eq!(parse_summary_table(wsl), some("537.13", "12.2"));
    }

    #[test]
    fn garbage_truncated_and_huge() {
        assert_eq!(parse_summary_table(""), (None, None));
        assert_eq!(parse_summary_table(&garbage()), (None, None));
        assert_eq!(
            parse_summary_table("| NVIDIA-SMI 580.159.04   Driver Version:"),
            (None, None)
        );
        assert_eq!(
            parse_summary_table("Driver Version: \u{1b}[31m CUDA Version: N/A"),
            (None, None)
        );
        // Labels without a colon are skipped, not matched.
        assert_eq!(
            parse_summary_table(&huge("Driver Version CUDA Version ")),
            (None, None)
        );
    }
}
