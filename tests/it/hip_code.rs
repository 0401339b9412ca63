//! `arch-not-in-build` for a HIP program's own GPU code: llama.cpp's and ollama's
//! `libggml-hip.so`, whose `.hip_fatbin` offload bundles name the gfx targets it carries
//! (`probe::rocm` `hip_code`, `parse::offload_bundle`). The fixture machines' libraries are
//! written by `scripts/gen-hip-fatbin-elf.py`. A library that is a FIFO, a 10 GB sparse file or
//! a link loop is a fact, never a hang.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::support::{
    copy_tree, doctor, finding, finding_ids, fixture_dir, fixture_env,
    generator_reproduces_its_table, mkfifo,
};

const KRACKAN: &str = "held-out-amd-krackan-llamacpp-no-gfx1152";
const LIB: &str = "home/clee/llama.cpp/build/bin/libggml-hip.so";

#[test]
fn fixture_hip_libraries_are_generated() {
    generator_reproduces_its_table("gen-hip-fatbin-elf.py");
}

#[test]
fn a_llamacpp_build_without_the_gpus_target_is_arch_not_in_build() {
    let r = doctor(KRACKAN);
    assert_eq!(finding_ids(&r), ["arch-not-in-build"]);
    let code = &r["rocm"]["hip_code"][0];
    assert_eq!(code["program"], "llama.cpp");
    assert_eq!(code["compressed"], false);
    assert_eq!(code["targets"].as_array().map(Vec::len), Some(7));
    let f = finding(&r, "arch-not-in-build");
    assert!(f["title"].as_str().unwrap().contains("gfx1152"));
    assert!(f["fix"].as_str().unwrap().contains("-DGPU_TARGETS=gfx1152"));
}

#[test]
fn an_ollama_build_that_dropped_the_target_is_explained_with_its_rocblas() {
    let r = doctor("amd-ollama-012-hip-code-without-gfx906");
    assert_eq!(r["rocm"]["hip_code"][0]["program"], "ollama");
    let f = finding(&r, "rocm-library-missing-target");
    assert!(f["explains"].to_string().contains("arch-not-in-build"));
}

/// The fixture machine copied into a scratch folder, to break its library.
struct Scratch {
    dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl Scratch {
    fn of(name: &str) -> Scratch {
        let dir = crate::support::tempdir();
        copy_tree(&fixture_dir(name).join("root"), &dir.path().join("root"));
        Scratch {
            dir,
            env: fixture_env(name),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join("root").join(rel)
    }

    fn doctor(&self) -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .arg("--root")
            .arg(self.dir.path().join("root"))
            .args(["--timeout", "2", "doctor", "--json"])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

#[test]
fn a_fifo_library_is_skipped_not_waited_on() {
    let m = Scratch::of(KRACKAN);
    let lib = m.path(LIB);
    std::fs::remove_file(&lib).unwrap();
    mkfifo(&lib);
    let r = m.doctor();
    assert_eq!(r["rocm"]["hip_code"], serde_json::json!([]));
    assert!(finding_ids(&r).is_empty());
}

#[test]
fn a_sparse_ten_gigabyte_library_costs_its_headers_only() {
    let m = Scratch::of(KRACKAN);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(m.path(LIB))
        .unwrap();
    f.set_len(10 << 30).unwrap();
    let r = m.doctor();
    assert_eq!(finding_ids(&r), ["arch-not-in-build"]);
}

#[test]
fn a_link_loop_or_a_cut_library_is_no_code() {
    let m = Scratch::of(KRACKAN);
    let lib = m.path(LIB);
    std::fs::remove_file(&lib).unwrap();
    std::os::unix::fs::symlink("libggml-hip.so", &lib).unwrap();
    let r = m.doctor();
    assert_eq!(r["rocm"]["hip_code"], serde_json::json!([]));
    let m = Scratch::of(KRACKAN);
    let bytes = std::fs::read(m.path(LIB)).unwrap();
    std::fs::write(m.path(LIB), &bytes[..100]).unwrap();
    let r = m.doctor();
    assert_eq!(r["rocm"]["hip_code"], serde_json::json!([]));
    assert!(finding_ids(&r).is_empty());
}

const COMPRESSED: &str = "amd-strix-halo-llamacpp-compressed-bundle-no-gfx1151";

#[test]
fn a_compressed_bundle_is_decoded_and_judged() {
    let r = doctor(COMPRESSED);
    let code = &r["rocm"]["hip_code"][0];
    assert_eq!(code["compressed"], true);
    assert_eq!(code["targets"].as_array().map(Vec::len), Some(5));
    assert_eq!(finding_ids(&r), ["arch-not-in-build"]);
    let f = finding(&r, "arch-not-in-build");
    assert!(
        f["evidence"]
            .to_string()
            .contains("compressed offload bundles")
    );
}

/// A compressed bundle whose stream is zeroed, corrupt or of another method than its header
/// says: the targets are unknown (empty, still marked compressed) and nothing is judged. (A
/// bomb stops at the decoded cap: `probe::compressed_module`'s unit tests.)
#[test]
fn a_hostile_compressed_bundle_has_unknown_targets() {
    let base = std::fs::read(Scratch::of(COMPRESSED).path("app/libggml-hip.so")).unwrap();
    let at = base.windows(4).position(|w| w == b"CCOB").unwrap();
    // The stream zeroed after its zlib header; a stream byte flipped; the zlib magic replaced
    // by zstd's first byte.
    let total = usize::try_from(u32::from_le_bytes(
        base[at + 8..at + 12].try_into().unwrap(),
    ))
    .unwrap();
    let mut zeroed = base.clone();
    zeroed[at + 26..at + total].fill(0);
    let mut flipped = base.clone();
    flipped[at + 24 + 2] ^= 0xff;
    let mut other = base.clone();
    other[at + 24] = 0x28;
    for (name, bytes) in [("zeroed", zeroed), ("flipped", flipped), ("other", other)] {
        let m = Scratch::of(COMPRESSED);
        std::fs::write(m.path("app/libggml-hip.so"), &bytes).unwrap();
        let r = m.doctor();
        let code = &r["rocm"]["hip_code"][0];
        assert_eq!(code["compressed"], true, "{name}");
        assert_eq!(code["targets"], serde_json::json!([]), "{name}");
        assert!(finding_ids(&r).is_empty(), "{name}: {:?}", finding_ids(&r));
    }
}
