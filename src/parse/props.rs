//! Property tests for every parser in this module: arbitrary bytes, and real captures from the
//! fixture machines cut, spliced and sprinkled with random bytes, must never make a parser
//! panic, loop or blow up, and what a parser gives back must come from its input. A few
//! hundred cases each, so `cargo test` stays fast; README's "Fuzzing" says how to run long.

use proptest::prelude::*;

use super::cuda_files;
use super::kernel;
use super::nvidia_smi;
use super::python_pkg as pkg;

/// Real inputs to start from: each parser sees mutants of text it knows.
const SEEDS: &[&str] = &[
    include_str!("../../tests/fixtures/toolkit13-on-driver550/root/usr/bin/nvidia-smi.q-x.xml"),
    include_str!(
        "../../tests/fixtures/toolkit13-on-driver550/root/usr/bin/nvidia-smi.query-gpu.csv"
    ),
    include_str!(
        "../../tests/fixtures/toolkit13-on-driver550/root/usr/local/cuda-13.0/version.json"
    ),
    include_str!("../../tests/fixtures/toolkit13-on-driver550/root/usr/local/cuda-13.0/bin/nvcc"),
    include_str!("../../tests/fixtures/toolkit13-on-driver550/root/etc/os-release"),
    include_str!("../../tests/fixtures/toolkit13-on-driver550/root/etc/ld.so.conf"),
    include_str!("../../tests/fixtures/toolkit13-on-driver550/root/proc/modules"),
    include_str!(
        "../../tests/fixtures/toolkit13-on-driver550/root/proc/driver/nvidia/gpus/0000:01:00.0/information"
    ),
    include_str!("../../tests/fixtures/h200/root/proc/driver/nvidia/version"),
    include_str!(
        "../../tests/fixtures/p100-torch-cu130/root/home/ubuntu/venv/lib/python3.10/site-packages/nvidia/cudnn/include/cudnn_version.h"
    ),
    include_str!(
        "../../tests/fixtures/p100-torch-cu130/root/home/ubuntu/venv/lib/python3.10/site-packages/nvidia_nvtx-13.0.85.dist-info/METADATA"
    ),
    include_str!("../../tests/fixtures/p100-torch-cu130/root/home/ubuntu/venv/pyvenv.cfg"),
    include_str!(
        "../../tests/fixtures/p100-torch-cu130/root/home/ubuntu/venv/lib/python3.10/site-packages/torch/version.py"
    ),
    include_str!(
        "../../tests/fixtures/healthy-rtx4090-tf-and-cuda/root/home/bob/proj/.venv/lib/python3.12/site-packages/tensorflow/python/platform/build_info.py"
    ),
];

/// One edit of a seed: cut it, or put random bytes at a place.
#[derive(Debug, Clone)]
enum Edit {
    Truncate(usize),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Duplicate(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Truncate),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 0..16))
            .prop_map(|(at, b)| Edit::Insert(at, b)),
        (any::<usize>(), 0usize..64).prop_map(|(at, n)| Edit::Delete(at, n)),
        (any::<usize>(), 0usize..256).prop_map(|(at, n)| Edit::Duplicate(at, n)),
    ]
}

fn apply(seed: &str, edits: &[Edit]) -> String {
    let mut bytes = seed.as_bytes().to_vec();
    for e in edits {
        let len = bytes.len().max(1);
        match e {
            Edit::Truncate(at) => bytes.truncate(at % len),
            Edit::Insert(at, b) => {
                let at = (at % len).min(bytes.len());
                bytes.splice(at..at, b.iter().copied());
            }
            Edit::Delete(at, n) => {
                let at = (at % len).min(bytes.len());
                let end = (at + n).min(bytes.len());
                bytes.drain(at..end);
            }
            Edit::Duplicate(at, n) => {
                let at = (at % len).min(bytes.len());
                let end = (at + n).min(bytes.len());
                let copy = bytes[at..end].to_vec();
                bytes.splice(at..at, copy);
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Mutants of the seeds, and plain random text.
fn input() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (0..SEEDS.len(), prop::collection::vec(edit(), 0..6))
            .prop_map(|(i, edits)| apply(SEEDS.get(i).copied().unwrap_or(""), &edits)),
        1 => prop::collection::vec(any::<u8>(), 0..512)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

/// Every parser once over `text`; what each returns is checked where a property is known.
fn every_parser(text: &str) {
    for v in [
        cuda_files::toolkit_version_json(text),
        cuda_files::toolkit_version_txt(text),
        cuda_files::cudnn_header_version(text),
        cuda_files::nccl_header_version(text),
        cuda_files::tensorrt_header_version(text),
        pkg::jax_plugin_version_py(text),
    ]
    .into_iter()
    .flatten()
    {
        // A version is made of the input's characters, never longer than it.
        assert!(v.len() <= text.len() + 8, "{v:?} from {} bytes", text.len());
    }
    // An `include` line may name several patterns, so entries are bounded by words, not lines.
    let entries = cuda_files::ld_so_conf(text);
    assert!(entries.len() <= text.split_whitespace().count() + 1);
    let _ = pkg::pyvenv_cfg(text);
    let _ = pkg::conda_environments_txt(text);
    let _ = pkg::metadata(text);
    let _ = pkg::dist_info_name(text);
    let _ = pkg::normalize_name(text);
    let _ = pkg::tf_build_info(text);
    let _ = pkg::torch_version_py(text);
    let _ = super::libname::split_soname(text);
    let _ = super::os_release::parse(text);
    let modules = kernel::loaded_modules(text);
    assert!(modules.len() <= text.lines().count());
    let _ = kernel::is_wsl(text);
    let _ = kernel::container_from_cgroup(text);
    let _ = kernel::secure_boot_from_efivar(text.as_bytes());
    let _ = kernel::pcie_gen_from_speed(text);
    let _ = kernel::parse_hex_id(text);
    let _ = kernel::parse_class(text);
    let _ = nvidia_smi::parse_xml(text);
    let rows = nvidia_smi::parse_query_csv(text);
    assert!(rows.len() <= text.lines().count());
    let _ = super::nvcc::parse_version(text);
    let _ = super::proc_nvidia::parse_driver_version(text);
    let _ = super::proc_nvidia::parse_gpu_information(text);
}

/// Cases per property: 300 in `cargo test`; `GPU_DOCTOR_FUZZ_CASES` for a long campaign.
fn cases() -> u32 {
    std::env::var("GPU_DOCTOR_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

/// A fixed seed in `cargo test`, so CI runs the same cases every time; `GPU_DOCTOR_FUZZ_SEED`
/// picks another, and a long campaign (`GPU_DOCTOR_FUZZ_CASES` set) without one is random.
fn config() -> ProptestConfig {
    let mut config = ProptestConfig::with_cases(cases());
    let seed = std::env::var("GPU_DOCTOR_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok());
    config.rng_seed = match seed {
        Some(seed) => proptest::test_runner::RngSeed::Fixed(seed),
        None if std::env::var_os("GPU_DOCTOR_FUZZ_CASES").is_some() => {
            proptest::test_runner::RngSeed::Random
        }
        None => proptest::test_runner::RngSeed::Fixed(0x6770_752d_646f_6374),
    };
    config
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn no_parser_panics_on_mutated_captures_or_noise(text in input()) {
        every_parser(&text);
    }

    #[test]
    fn a_version_file_gives_back_its_version(
        major in 1u32..30, minor in 0u32..10, patch in 0u32..200,
        junk in prop::collection::vec(32u8..127, 0..20)
    ) {
        let junk = String::from_utf8_lossy(&junk);
        let v = format!("{major}.{minor}.{patch}");
        let txt = format!("CUDA Version {v}\n{junk}");
        prop_assert_eq!(cuda_files::toolkit_version_txt(&txt), Some(v.clone()));
        let json = format!("{{\"cuda\": {{\"name\": \"CUDA SDK\", \"version\": \"{v}\"}}}}");
        prop_assert_eq!(cuda_files::toolkit_version_json(&json), Some(v));
    }
}

/// An `ld.so.cache` in either layout: `n` entries whose strings lie at random places of a
/// random string area (inside one another, past the end, unterminated), and a header count
/// that may claim more than there is.
fn ld_cache_bytes() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<bool>(),
        prop::collection::vec((any::<u16>(), any::<u16>(), any::<u8>()), 0..300),
        prop::collection::vec(
            prop_oneof![Just(0u8), Just(b'x'), Just(b'/'), any::<u8>()],
            0..2048,
        ),
        0u32..1000,
    )
        .prop_map(|(new, entries, strings, extra)| {
            let n = u32::try_from(entries.len()).unwrap_or(0);
            let (mut out, header, size) = if new {
                let mut out = b"glibc-ld.so.cache1.1".to_vec();
                out.extend_from_slice(&(n + extra).to_le_bytes());
                out.extend_from_slice(&[0u8; 24]);
                (out, 48u32, 24usize)
            } else {
                let mut out = b"ld.so-1.7.0\0".to_vec();
                out.extend_from_slice(&(n + extra).to_le_bytes());
                (out, 16u32, 12usize)
            };
            let base = if new { 0 } else { header + n * 12 };
            let table = header + n * u32::try_from(size).unwrap_or(24);
            for (key, value, arch) in &entries {
                let flags: i32 = if *arch % 2 == 0 { 0x0303 } else { 0x0a03 };
                out.extend_from_slice(&flags.to_le_bytes());
                out.extend_from_slice(&(table - base + u32::from(*key) % 2100).to_le_bytes());
                out.extend_from_slice(&(table - base + u32::from(*value) % 2100).to_le_bytes());
                out.resize(out.len() + size - 12, 0);
            }
            out.extend_from_slice(&strings);
            out
        })
}

/// Text shown to people: after [`crate::sanitize::clean`] no control or invisible character is
/// left, and no line is longer than the cap and its marker.
fn shown_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            any::<char>(),
            Just('\u{200b}'),
            Just('\u{202e}'),
            Just('\u{feff}'),
            Just('\u{e0041}'),
            Just('\u{1b}'),
            Just('\u{9b}'),
            Just('\u{ad}'),
            Just('\u{2028}'),
        ],
        0..200,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn an_ld_so_cache_costs_its_size_and_its_entries_point_into_it(bytes in ld_cache_bytes()) {
        let len = bytes.len();
        if let Some(cache) = super::ld_cache::parse(bytes) {
            prop_assert!(cache.entries().len() <= super::ld_cache::MAX_ENTRIES);
            prop_assert!(cache.entries().len() * 24 <= len);
            for e in cache.entries() {
                let soname = cache.soname(e);
                // Each string is a place in the file, not a copy of it.
                let lossy = soname.contains('\u{fffd}');
                let borrowed = matches!(soname, std::borrow::Cow::Borrowed(_));
                prop_assert!(borrowed || lossy);
                prop_assert!(cache.path(e).len() <= 4096 * 3);
                let found = cache.lookup(&soname, e.flags & super::ld_cache::FLAG_REQUIRED_MASK);
                if !lossy {
                    prop_assert!(found.is_some_and(|f| cache.soname(f) == soname));
                }
            }
        }
    }

    #[test]
    fn text_shown_to_people_has_no_control_or_invisible_character(text in shown_text()) {
        let shown = crate::sanitize::clean(&text);
        prop_assert!(crate::sanitize::is_clean(&shown), "{:?}", shown);
        prop_assert!(!shown.contains('\n'));
        let long = text.repeat(60);
        let cut = crate::sanitize::clean(&long);
        prop_assert!(cut.chars().count() <= crate::sanitize::MAX_SHOWN * 9 + 40);
    }
}

#[test]
fn the_seeds_are_understood_before_they_are_mutated() {
    // Without this the mutants would start from text no parser reads, and prove little.
    assert!(nvidia_smi::parse_xml(SEEDS[0]).is_ok());
    assert!(!nvidia_smi::parse_query_csv(SEEDS[1]).is_empty());
    assert!(cuda_files::toolkit_version_json(SEEDS[2]).is_some());
    assert!(cuda_files::cudnn_header_version(SEEDS[9]).is_some());
}
