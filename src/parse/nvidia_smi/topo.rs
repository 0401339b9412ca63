//! `nvidia-smi topo -m`: the GPU and NIC connection matrix, the CPU and NUMA affinity columns,
//! and the "NIC Legend".
//!
//! nvidia-smi separates cells with tabs and underlines the header with an ANSI escape on a
//! terminal; a pasted copy has spaces instead, and sometimes two cells run together where a tab
//! stop swallowed the gap ("SYSSYS", "NIC7NIC8": NVIDIA/nccl-tests#311). Both are read: cells
//! split on tabs, else on spaces with the multi-word headers joined; cells that are two or more
//! of nvidia-smi's words run together are split again. What still does not fit is listed in
//! [`Topology::unread`], never guessed. Pure.

use crate::report::topology::{Link, TopoGpu, TopoNic, Topology};

/// The header columns after the devices, as nvidia-smi names them.
const AFFINITY_COLUMNS: [&str; 3] = ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"];

/// The most devices read: a topology of thousands of columns is no machine's.
const MAX_DEVICES: usize = 1024;

/// The matrix in `text`, or `None` when it holds none (no header naming `GPU0`).
#[must_use]
pub fn parse_topo(text: &str) -> Option<Topology> {
    let lines: Vec<String> = text.lines().map(strip_escapes).collect();
    let (at, columns) = lines
        .iter()
        .enumerate()
        .find_map(|(i, line)| header(line).map(|columns| (i, columns)))?;
    let devices: Vec<String> = columns
        .iter()
        .take_while(|c| !AFFINITY_COLUMNS.contains(&c.as_str()))
        .take(MAX_DEVICES)
        .cloned()
        .collect();
    let trailing: Vec<&str> = columns
        .iter()
        .skip(devices.len())
        .map(String::as_str)
        .collect();
    let legend = nic_legend(&lines);
    let mut topo = Topology {
        source: "nvidia-smi topo -m".to_string(),
        ..Topology::default()
    };
    // Columns that are no GPU are NICs ("NIC0", or "mlx5_0" from older drivers).
    let gpu_columns: Vec<usize> = devices
        .iter()
        .enumerate()
        .filter(|(_, name)| gpu_index(name).is_some())
        .map(|(i, _)| i)
        .collect();
    for label in devices.iter().filter(|name| gpu_index(name).is_none()) {
        let label = label.clone();
        let device = legend
            .iter()
            .find(|(nic, _)| *nic == label)
            .map(|(_, dev)| dev.clone())
            .or_else(|| (!label.starts_with("NIC")).then(|| label.clone()));
        topo.nics.push(TopoNic {
            label,
            device,
            numa_node: None,
        });
    }
    for line in lines.iter().skip(at + 1) {
        if line.trim().is_empty() || line.trim_start().starts_with("Legend") {
            break;
        }
        let cells = cells(line);
        let Some(name) = cells.first() else { continue };
        let Some(index) = gpu_index(name) else {
            continue; // a NIC's row repeats what the GPU rows say
        };
        let Some((links, rest)) = row_links(cells.get(1..).unwrap_or_default(), devices.len())
        else {
            topo.unread.push(format!(
                "{name}: {} cells where {} devices are named",
                cells.len() - 1,
                devices.len()
            ));
            continue;
        };
        let mut gpu = TopoGpu {
            index,
            ..TopoGpu::default()
        };
        for (column, cell) in links.iter().enumerate() {
            let link = Link::parse(cell).unwrap_or(Link::Other(String::new()));
            if let Link::Other(text) = &link {
                topo.unread.push(format!(
                    "{name} to {}: {text:?}",
                    devices.get(column).map_or("?", String::as_str)
                ));
            }
            if gpu_columns.contains(&column) {
                gpu.gpus.push(link);
            } else {
                gpu.nics.push(link);
            }
        }
        affinity(&mut gpu, &trailing, &rest);
        topo.gpus.push(gpu);
    }
    Some(topo)
}

/// The header's columns: the first line whose first cell is `GPU0`.
fn header(line: &str) -> Option<Vec<String>> {
    let columns = if line.contains('\t') {
        cells(line)
    } else {
        join_headers(&repaired(
            line.split_whitespace().map(str::to_string).collect(),
        ))
    };
    (columns.first().map(String::as_str) == Some("GPU0")).then_some(columns)
}

/// Cells split on tabs (empty ones dropped: nvidia-smi pads with extra tabs), else on spaces.
fn cells(line: &str) -> Vec<String> {
    if line.contains('\t') {
        line.split('\t')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect()
    } else {
        line.split_whitespace().map(str::to_string).collect()
    }
}

/// Space-split header words with the multi-word column names put back together.
fn join_headers(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let named = AFFINITY_COLUMNS.iter().find(|name| {
            let parts: Vec<&str> = name.split(' ').collect();
            words
                .get(i..i + parts.len())
                .is_some_and(|w| w.iter().map(String::as_str).eq(parts.iter().copied()))
        });
        if let Some(name) = named {
            out.push((*name).to_string());
            i += name.split(' ').count();
        } else {
            out.extend(words.get(i).cloned());
            i += 1;
        }
    }
    out
}

/// Splits header words that are several device names run together ("NIC7NIC8").
fn repaired(words: Vec<String>) -> Vec<String> {
    words
        .into_iter()
        .flat_map(|word| split_run(&word, &["GPU", "NIC"]).unwrap_or_else(|| vec![word]))
        .collect()
}

/// `word` as two or more `PREFIX<digits>` names run together, else `None`.
fn split_run(word: &str, prefixes: &[&str]) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = word;
    while !rest.is_empty() {
        let prefix = prefixes.iter().find(|p| rest.starts_with(**p))?;
        let digits = rest[prefix.len()..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        if digits == 0 {
            return None;
        }
        let end = prefix.len() + digits;
        out.push(rest[..end].to_string());
        rest = &rest[end..];
    }
    (out.len() > 1).then_some(out)
}

/// A cell that is several link words run together ("SYSSYS", "PXBSYS"), split; else `None`.
fn split_links(cell: &str) -> Option<Vec<String>> {
    const WORDS: [&str; 8] = ["NODE", "SYS", "SOC", "PHB", "PXB", "PIX", "NV", "X"];
    let mut out = Vec::new();
    let mut rest = cell;
    while !rest.is_empty() {
        let word = WORDS.iter().find(|w| rest.starts_with(**w))?;
        let mut end = word.len();
        if *word == "NV" {
            let digits = rest[2..].bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return None;
            }
            end += digits;
        }
        out.push(rest[..end].to_string());
        rest = &rest[end..];
    }
    (out.len() > 1).then_some(out)
}

/// The row's `devices` link cells and what follows them, splitting run-together cells when
/// the row does not read as it stands; `None` when it is too short even so.
fn row_links(cells: &[String], devices: usize) -> Option<(Vec<String>, Vec<String>)> {
    let known = |c: &String| !matches!(Link::parse(c), Some(Link::Other(_)) | None);
    let direct = cells
        .split_at_checked(devices)
        .map(|(links, rest)| (links.to_vec(), rest.to_vec()));
    if direct
        .as_ref()
        .is_some_and(|(links, _)| links.iter().all(known))
    {
        return direct;
    }
    let mut split = Vec::new();
    let mut used = 0;
    for cell in cells {
        if split.len() >= devices {
            break;
        }
        match split_links(cell) {
            Some(parts) => split.extend(parts),
            None => split.push(cell.clone()),
        }
        used += 1;
    }
    if split.len() == devices && split.iter().all(known) {
        return Some((split, cells.iter().skip(used).cloned().collect()));
    }
    // Cells nvidia-smi never prints stay, named in `unread` by the caller.
    direct
}

/// The affinity columns after the links, matched to the header's names in order.
fn affinity(gpu: &mut TopoGpu, names: &[&str], values: &[String]) {
    for (name, value) in names.iter().zip(values) {
        match *name {
            "CPU Affinity" => gpu.cpu_affinity = Some(value.clone()),
            "NUMA Affinity" => match value.parse() {
                Ok(node) => gpu.numa_node = Some(node),
                Err(_) => gpu.numa_affinity = Some(value.clone()),
            },
            _ => {}
        }
    }
}

/// `GPU3` -> 3.
fn gpu_index(name: &str) -> Option<u32> {
    name.strip_prefix("GPU")?.parse().ok()
}

/// The "NIC Legend" lines, `  NIC0: mlx5_0`.
fn nic_legend(lines: &[String]) -> Vec<(String, String)> {
    let Some(start) = lines
        .iter()
        .position(|l| l.trim_start().starts_with("NIC Legend"))
    else {
        return Vec::new();
    };
    lines
        .iter()
        .skip(start + 1)
        .filter_map(|line| {
            let (nic, device) = line.trim().split_once(':')?;
            let nic = nic.trim();
            (nic.starts_with("NIC") && !device.trim().is_empty())
                .then(|| (nic.to_string(), device.trim().to_string()))
        })
        .take(MAX_DEVICES)
        .collect()
}

/// The line without ANSI escapes (`ESC [ ... letter`), which nvidia-smi prints on a terminal.
fn strip_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::parse_topo;
    use crate::report::topology::{Link, Topology};

    fn read(file: &str) -> Topology {
        let path = format!(
            "{}/tests/data/nvidia-smi-topo/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        parse_topo(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    /// Every row's GPU-to-GPU links as text, for comparing with the capture by eye.
    fn gpu_matrix(t: &Topology) -> Vec<String> {
        t.gpus
            .iter()
            .map(|g| {
                g.gpus
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    fn nic_row(t: &Topology, gpu: usize) -> String {
        t.gpus[gpu]
            .nics
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn an_hgx_h100_with_eight_nics() {
        let t = read("sglang-30401-hgx-8x-h100-8nic.txt");
        assert!(t.unread.is_empty(), "{:?}", t.unread);
        assert_eq!(t.gpus.len(), 8);
        assert!(t.gpu_pairs().all(|(_, _, link)| *link == Link::NvLink(18)));
        assert_eq!(t.gpu_pairs().count(), 28);
        assert_eq!(t.gpus[3].gpus[3], Link::Itself);
        let devices: Vec<_> = t.nics.iter().filter_map(|n| n.device.as_deref()).collect();
        assert_eq!(
            devices,
            [
                "mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"
            ]
        );
        assert_eq!(nic_row(&t, 0), "PIX NODE NODE NODE SYS SYS SYS SYS");
        assert_eq!(nic_row(&t, 5), "SYS SYS SYS SYS NODE PIX NODE NODE");
        assert_eq!(t.gpus[0].cpu_affinity.as_deref(), Some("0-47,96-143"));
        assert_eq!(t.gpus[0].numa_node, Some(0));
        assert_eq!(t.gpus[7].cpu_affinity.as_deref(), Some("48-95,144-191"));
        assert_eq!(t.gpus[7].numa_node, Some(1));
        let (nearest, link) = t.nearest_nics(&t.gpus[6]);
        assert_eq!(nearest.len(), 1);
        assert_eq!(nearest[0].device.as_deref(), Some("mlx5_6"));
        assert_eq!(link, Some(&Link::Pix));
        assert_eq!(
            t.summary(),
            "8 GPUs, NV18 between every pair; 8 NICs, each GPU's nearest at PIX"
        );
    }

    #[test]
    fn an_hgx_a100_pasted_with_cells_run_together_reads_whole() {
        let t = read("nccl-tests-311-hgx-8x-a100-10nic-pasted.txt");
        assert!(t.unread.is_empty(), "{:?}", t.unread);
        assert_eq!(t.gpus.len(), 8);
        assert_eq!(t.nics.len(), 10);
        assert_eq!(t.nics[7].label, "NIC7");
        assert_eq!(t.nics[8].device.as_deref(), Some("mlx5_8"));
        assert!(t.gpu_pairs().all(|(_, _, link)| *link == Link::NvLink(12)));
        // "SYSSYS" and "PXBSYS" are two cells each.
        assert_eq!(nic_row(&t, 0), "PXB PXB SYS SYS SYS SYS SYS SYS SYS SYS");
        assert_eq!(nic_row(&t, 6), "SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS");
        let numa: Vec<_> = t.gpus.iter().map(|g| g.numa_node).collect();
        assert_eq!(
            numa,
            [3, 3, 1, 1, 7, 7, 5, 5].map(Some),
            "AMD EPYC NPS4: each GPU pair on its own node"
        );
        assert_eq!(t.gpus[4].cpu_affinity.as_deref(), Some("56-63,120-127"));
        let (nearest, link) = t.nearest_nics(&t.gpus[2]);
        let names: Vec<_> = nearest.iter().filter_map(|n| n.device.as_deref()).collect();
        assert_eq!((names, link), (vec!["mlx5_2", "mlx5_3"], Some(&Link::Pxb)));
    }

    #[test]
    fn eight_gpus_without_nics_in_either_spacing() {
        let h100 = read("ml-engineering-8x-h100.txt");
        assert_eq!(h100.gpus.len(), 8);
        assert!(h100.nics.is_empty());
        assert!(
            h100.gpu_pairs()
                .all(|(_, _, link)| *link == Link::NvLink(18))
        );
        assert_eq!(h100.gpus[4].cpu_affinity.as_deref(), Some("52-103,156-207"));
        assert_eq!(h100.summary(), "8 GPUs, NV18 between every pair");
        let a100 = read("ml-engineering-8x-a100.txt");
        assert_eq!(gpu_matrix(&a100)[1], "NV12 X NV12 NV12 NV12 NV12 NV12 NV12");
        assert_eq!(a100.gpus[5].numa_node, Some(1));
        assert_eq!(a100.gpus[5].cpu_affinity.as_deref(), Some("24-47"));
    }

    #[test]
    fn pcie_boxes_with_numa_nodes_and_nics() {
        let four = read("stelline-asus-esc8000a-e12-4x-rtx6000ada.txt");
        assert!(four.unread.is_empty(), "{:?}", four.unread);
        assert_eq!(
            gpu_matrix(&four),
            [
                "X NODE SYS SYS",
                "NODE X SYS SYS",
                "SYS SYS X NODE",
                "SYS SYS NODE X"
            ]
        );
        assert_eq!(nic_row(&four, 2), "SYS SYS NODE NODE");
        assert_eq!(four.gpus[2].numa_node, Some(1));
        assert_eq!(
            four.summary(),
            "4 GPUs, NODE/SYS between pairs; 4 NICs, each GPU's nearest at NODE"
        );
        let two = read("stelline-puget-wrx90-2x-rtx6000ada.txt");
        assert_eq!(gpu_matrix(&two), ["X PHB", "PHB X"]);
        assert_eq!(nic_row(&two, 1), "NODE NODE");
        assert_eq!(two.gpus[1].cpu_affinity.as_deref(), Some("0-23"));
    }

    #[test]
    fn our_own_capture_with_tabs_and_terminal_escapes() {
        let t = read("h200-own-capture-1gpu.txt");
        assert!(t.unread.is_empty(), "{:?}", t.unread);
        assert_eq!(t.gpus.len(), 1);
        assert_eq!(t.gpus[0].gpus, [Link::Itself]);
        assert_eq!(t.gpus[0].cpu_affinity.as_deref(), Some("0-15"));
        assert_eq!(t.gpus[0].numa_node, Some(0));
        assert!(t.nics.is_empty());
        assert_eq!(t.gpu_pairs().count(), 0);
    }

    #[test]
    fn no_matrix_is_none_and_a_short_row_is_unread_not_guessed() {
        assert!(parse_topo("").is_none());
        assert!(parse_topo("NVIDIA-SMI has failed because it couldn't communicate").is_none());
        let text = "\tGPU0\tGPU1\tCPU Affinity\n\
                    GPU0\t X \tNV4\t0-7\n\
                    GPU1\tNV4\n";
        let t = parse_topo(text).unwrap();
        assert_eq!(t.gpus.len(), 1);
        assert_eq!(t.unread, ["GPU1: 1 cells where 2 devices are named"]);
        // A word nvidia-smi never prints is kept as printed and named.
        let t = parse_topo("\tGPU0\tGPU1\nGPU0\t X \tZZZ\nGPU1\tZZZ\t X \n").unwrap();
        assert_eq!(t.gpus[0].gpus[1], Link::Other("ZZZ".into()));
        assert_eq!(t.unread.len(), 2, "{:?}", t.unread);
    }
}
