//! What NCCL says it chose, from its `NCCL_DEBUG=INFO` lines: the transport of each channel
//! between two ranks (`... NCCL INFO Channel 00/0 : 4[0] -> 5[1] via P2P/CUMEM/read`), the
//! collective network (`CollNet 00/0 : 0 [receive] via COLLNET/SHARP/1/GDRDMA`) and the network
//! devices (`NET/IB : Using [0]mlx5_2:1/IB/SHARP ...`).
//!
//! The first word after `via` is the transport: `P2P` (GPU to GPU directly, over NVLink or PCIe;
//! `P2P/CUMEM`, `P2P/IPC`, `P2P/direct pointer` by how the memory is shared), `SHM` (through host
//! shared memory), `NET` (through a network card: `NET/IB`, `NET/IBext_v8`, `NET/Socket`; `GDRDMA`
//! when the card reads GPU memory directly), `COLLNET`, `NVLS` (NVLink SHARP). Pure.

/// How two ranks' data travels, by the first word after `via`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TransportKind {
    P2p,
    Shm,
    Net,
    CollNet,
    Nvls,
    Other,
}

impl TransportKind {
    fn of(via: &str) -> TransportKind {
        match via.split('/').next().unwrap_or_default() {
            "P2P" => TransportKind::P2p,
            "SHM" => TransportKind::Shm,
            "NET" => TransportKind::Net,
            "COLLNET" => TransportKind::CollNet,
            "NVLS" => TransportKind::Nvls,
            _ => TransportKind::Other,
        }
    }

    /// The report's word: "p2p", "shm", "net", "collnet", "nvls", "other".
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::P2p => "p2p",
            TransportKind::Shm => "shm",
            TransportKind::Net => "net",
            TransportKind::CollNet => "collnet",
            TransportKind::Nvls => "nvls",
            TransportKind::Other => "other",
        }
    }
}

/// One transport as NCCL named it, and on how many channel connections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportUse {
    pub kind: TransportKind,
    /// The `via` text without its per-connection parts: "P2P/CUMEM/read", "SHM/direct/direct",
    /// "NET/IBext_v8/GDRDMA" (the device number dropped), "COLLNET/SHARP/GDRDMA".
    pub via: String,
    pub connections: usize,
}

/// Every transport the lines name, most used first (then by kind and text), and the network
/// devices of the first `NET/... : Using` line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NcclTransports {
    pub uses: Vec<TransportUse>,
    /// "mlx5_2:1/IB/SHARP", "ibp5s0:<0>": as NCCL lists them, without the `[n]` index.
    pub net_devices: Vec<String>,
}

/// The most distinct transports kept: a log names a handful.
const MAX_USES: usize = 64;

/// Reads the transports out of NCCL's log lines (any other line is passed over).
#[must_use]
pub fn parse_nccl_transports(text: &str) -> NcclTransports {
    let mut out = NcclTransports::default();
    for line in text.lines() {
        let Some((_, info)) = line.split_once(" NCCL INFO ") else {
            continue;
        };
        let info = info.trim();
        if info.starts_with("Channel ") || info.starts_with("CollNet ") {
            if let Some((_, via)) = info.rsplit_once(" via ") {
                count(&mut out.uses, via.trim());
            }
        } else if out.net_devices.is_empty()
            && info.starts_with("NET/")
            && let Some((_, devices)) = info.split_once(": Using ")
        {
            let devices = devices.split(';').next().unwrap_or_default();
            out.net_devices = devices
                .split_whitespace()
                .filter(|d| *d != "[RO]")
                .map(|d| d.split_once(']').map_or(d, |(_, name)| name).to_string())
                .take(MAX_USES)
                .collect();
        }
    }
    out.uses.sort_by(|a, b| {
        b.connections
            .cmp(&a.connections)
            .then(a.kind.cmp(&b.kind))
            .then(a.via.cmp(&b.via))
    });
    out
}

/// Adds one connection of `via`, its per-connection numbers dropped (`NET/IBext_v8/5(2)/GDRDMA`
/// and `NET/IBext_v8/1/GDRDMA` are one transport).
fn count(uses: &mut Vec<TransportUse>, via: &str) {
    let via = via
        .split('/')
        .filter(|part| !part.starts_with(|c: char| c.is_ascii_digit()))
        .collect::<Vec<_>>()
        .join("/");
    if let Some(known) = uses.iter_mut().find(|u| u.via == via) {
        known.connections += 1;
    } else if uses.len() < MAX_USES {
        uses.push(TransportUse {
            kind: TransportKind::of(&via),
            via,
            connections: 1,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::{TransportKind, parse_nccl_transports};

    fn summary(text: &str) -> Vec<(TransportKind, String, usize)> {
        parse_nccl_transports(text)
            .uses
            .into_iter()
            .map(|u| (u.kind, u.via, u.connections))
            .collect()
    }

    /// NVIDIA/nccl-tests#311 (HGX A100, 4 nodes x 2 GPUs, NCCL 2.23.4): P2P inside a node, IB with
    /// GPUDirect RDMA between nodes, and the SHARP plugin's CollNet and device list.
    #[test]
    fn p2p_inside_the_node_and_ib_between_nodes() {
        let log = "\
gpu40:9455:9487 [0] NCCL INFO NET/IB : Using [0]mlx5_2:1/IB/SHARP [1]mlx5_0:1/IB/SHARP [2]mlx5_6:1/IB/SHARP [3]mlx5_8:1/IB/SHARP [4]mlx5_9:1/IB/SHARP [5]mlx5_4:1/IB/SHARP [RO]; OOB ib0:10.159.0.40<0>
gpu34:23654:23684 [0] NCCL INFO CollNet 00/0 : 0 [receive] via COLLNET/SHARP/1/GDRDMA
gpu34:34088:34142 [0] NCCL INFO Channel 00/0 : 7[1] -> 0[0] [receive] via NET/IBext_v8/1/GDRDMA
gpu40:9455:9578 [0] NCCL INFO Channel 00/0 : 3[1] -> 4[0] [receive] via NET/IBext_v8/0/GDRDMA
gpu40:9455:9578 [0] NCCL INFO Channel 00/0 : 4[0] -> 5[1] via P2P/CUMEM/read
gpu36:20775:20832 [0] NCCL INFO Channel 00/0 : 2[0] -> 3[1] via P2P/CUMEM/read
gpu34:34088:34142 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
gpu36:20776:20833 [1] NCCL INFO Channel 00/0 : 3[1] -> 4[0] [send] via NET/IBext_v8/5(2)/GDRDMA
gpu36:20775:20807 [0] transport.cc:384 NCCL WARN Cannot initialize CollNet, using point-to-point network instead
";
        assert_eq!(
            summary(log),
            [
                (TransportKind::P2p, "P2P/CUMEM/read".into(), 3),
                (TransportKind::Net, "NET/IBext_v8/GDRDMA".into(), 3),
                (TransportKind::CollNet, "COLLNET/SHARP/GDRDMA".into(), 1),
            ]
        );
        assert_eq!(
            parse_nccl_transports(log).net_devices,
            [
                "mlx5_2:1/IB/SHARP",
                "mlx5_0:1/IB/SHARP",
                "mlx5_6:1/IB/SHARP",
                "mlx5_8:1/IB/SHARP",
                "mlx5_9:1/IB/SHARP",
                "mlx5_4:1/IB/SHARP"
            ]
        );
    }

    /// NVIDIA/nccl-tests#166 (SHM between local ranks, sockets between nodes) and
    /// NVIDIA/nccl#1817 ("P2P is slow than SHM").
    #[test]
    fn host_memory_and_sockets() {
        let log = "\
ubuntu:9621:9692 [7] NCCL INFO Channel 14/0 : 15[7] -> 0[0] [send] via NET/Socket/0
ubuntu:39964:40050 [6] NCCL INFO Channel 09 : 6[6] -> 7[7] via SHM/direct/direct
ubuntu:9621:9688 [3] NCCL INFO Channel 05 : 11[3] -> 12[4] via SHM/direct/direct
sh9-machine-20250813085604-64df4c99dc-m27xf:3884652:3884740 [7] NCCL INFO Channel 01 : 7[7] -> 2[2] via SHM/direct/direct
";
        assert_eq!(
            summary(log),
            [
                (TransportKind::Shm, "SHM/direct/direct".into(), 3),
                (TransportKind::Net, "NET/Socket".into(), 1),
            ]
        );
    }

    /// Older NCCL's words: NVIDIA/nccl-tests#213 (`P2P/direct pointer`), NVIDIA/nccl#527
    /// (`Channel 04 : 25[101d0] -> 24[101c0]`, bus ids in the brackets), NVIDIA/nccl#429 (`NET/IB`).
    #[test]
    fn older_spellings() {
        let log = "\
hw14:798:813 [3] NCCL INFO Channel 02/0 : 3[3] -> 4[4] via P2P/direct pointer
ip-10-216-179-119:416602:416643 [1] NCCL INFO Channel 04 : 25[101d0] -> 24[101c0] via P2P/IPC/read
machine-1:16194:18586 [6] NCCL INFO Channel 03 : 7[b2000] -> 14[b1000] [receive] via NET/IB/0/GDRDMA
";
        assert_eq!(
            summary(log),
            [
                (TransportKind::P2p, "P2P/IPC/read".into(), 1),
                (TransportKind::P2p, "P2P/direct pointer".into(), 1),
                (TransportKind::Net, "NET/IB/GDRDMA".into(), 1),
            ]
        );
    }

    #[test]
    fn other_lines_and_no_lines_give_nothing() {
        assert_eq!(parse_nccl_transports(""), Default::default());
        let t = parse_nccl_transports(
            "gpu34:23654:23684 [0] NCCL INFO Trees [0] 1/4/-1->0->-1\nrandom text via SHM\n",
        );
        assert!(t.uses.is_empty() && t.net_devices.is_empty());
        assert_eq!(TransportKind::Nvls.as_str(), "nvls");
    }
}
