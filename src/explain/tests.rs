//! `explain` on made-up reports: which finding is chosen, how a text is read, what a huge or
//! hostile text does. The real machines of `tests/fixtures/` are `tests/it/explain.rs`'s.

use super::*;
use crate::report::{Finding, Gpu, Severity};

fn table() -> &'static ErrorTable {
    crate::manifest::embedded().errors.table()
}

fn finding(id: &str, title: &str, subjects: &[&str]) -> Finding {
    Finding {
        id: id.to_string(),
        severity: Severity::Error,
        title: title.to_string(),
        detail: String::new(),
        evidence: Vec::new(),
        fix: None,
        explains: Vec::new(),
        subjects: subjects.iter().map(|s| (*s).into()).collect(),
        fix_target: crate::report::FixTarget::Here,
    }
}

fn machine(findings: Vec<Finding>) -> Report {
    Report {
        findings,
        gpus: vec![Gpu {
            index: 0,
            name: Some("NVIDIA H200".to_string()),
            compute_capability: Some("9.0".to_string()),
            memory_total_mib: Some(143_771),
            ..Gpu::default()
        }],
        ..Report::default()
    }
}

fn run(report: &Report, text: &str) -> Explain {
    explain(report, table(), text.as_bytes(), None)
}

fn ids(e: &Explain) -> Vec<&str> {
    e.signatures.iter().map(|s| s.id.as_str()).collect()
}

#[test]
fn every_cause_the_table_names_is_a_registered_finding() {
    for row in &table().errors {
        for cause in &row.causes {
            assert!(
                crate::diagnose::ids::kind(cause).is_some(),
                "{}: {cause} is not in src/diagnose/ids.rs",
                row.id
            );
        }
    }
}

#[test]
fn the_first_fatal_message_leads_and_the_machine_names_its_cause() {
    let report = machine(vec![
        finding("nccl-interface-unset", "several NICs", &[]),
        finding(
            "arch-not-in-build",
            "torch has no kernels for this GPU",
            &["framework:/venv:torch"],
        ),
    ]);
    let text = "UserWarning: NVIDIA H200 with CUDA capability sm_90 is not compatible with the current PyTorch installation.\n\
                step 1 loss 2.3\n\
                RuntimeError: CUDA error: no kernel image is available for execution on the device\n\
                NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned 113(No route to host)\n";
    let e = run(&report, text);
    assert_eq!(
        ids(&e),
        [
            "cuda-no-kernel-image",
            "torch-arch-not-compatible",
            "nccl-peer-connection-lost"
        ]
    );
    assert_eq!(e.cause.as_deref(), Some("arch-not-in-build"));
    assert_eq!(e.cause_for.as_deref(), Some("cuda-no-kernel-image"));
    assert_eq!(e.signatures[0].line, 3);
    assert_eq!(
        e.signatures[2].cause.as_deref(),
        Some("nccl-interface-unset")
    );
    // The warning's GPU is this machine's.
    assert!(
        e.signatures[1].notes[0].contains("GPU 0 (NVIDIA H200) on this machine"),
        "{:?}",
        e.signatures[1].notes
    );
    for s in &e.signatures {
        assert!(e.text.contains(&s.matched), "{} not verbatim", s.id);
    }
}

#[test]
fn without_a_finding_the_cause_is_null_and_the_message_is_still_recognised() {
    let e = run(
        &machine(Vec::new()),
        "CUDA error 802: system not yet initialized",
    );
    assert_eq!(ids(&e), ["cuda-system-not-ready"]);
    assert_eq!(e.cause, None);
    assert_eq!(e.cause_for, None);
    assert!(!e.signatures[0].elsewhere.is_empty() || !e.signatures[0].checks.is_empty());
}

#[test]
fn a_later_message_with_a_cause_explains_when_the_first_has_none() {
    let report = machine(vec![finding("fabric-manager-not-running", "no FM", &[])]);
    let text = "RuntimeError: CUDA error: an illegal memory access was encountered\n\
                NCCL WARN Cuda failure 'system not yet initialized'\n";
    let e = run(&report, text);
    assert_eq!(e.signatures[0].id, "cuda-illegal-address");
    assert_eq!(e.cause.as_deref(), Some("fabric-manager-not-running"));
    assert_eq!(e.cause_for.as_deref(), Some("cuda-system-not-ready"));
}

#[test]
fn a_generic_symptom_is_explained_by_the_blocking_finding_nearest_the_gpu() {
    let text = "RuntimeError: No CUDA GPUs are available\n";
    // Neither is among the row's own causes; the module comes before the container in the graph.
    let report = machine(vec![
        finding("container-lost-gpu-access", "lost", &[]),
        finding("driver-too-new-for-gpu", "legacy GPU", &[]),
    ]);
    assert!(
        !table()
            .by_id("torch-no-cuda-gpus")
            .unwrap()
            .causes
            .iter()
            .any(|c| c == "driver-too-new-for-gpu")
    );
    assert_eq!(
        run(&report, text).cause.as_deref(),
        Some("driver-too-new-for-gpu")
    );
    // A row's own cause outranks the graph's order.
    let report = machine(vec![
        finding("driver-too-new-for-gpu", "legacy GPU", &[]),
        finding("visible-devices-hides-gpus", "hidden", &[]),
    ]);
    assert_eq!(
        run(&report, text).cause.as_deref(),
        Some("visible-devices-hides-gpus")
    );
    // A warning, or a finding that blocks nothing, explains no generic symptom.
    let mut warning = finding("container-lost-gpu-access", "lost", &[]);
    warning.severity = Severity::Warning;
    let report = machine(vec![warning, finding("gpu-ecc-errors", "ECC", &[])]);
    assert_eq!(run(&report, text).cause, None);
    // A message that is not generic gets no blocking finding it does not name.
    let report = machine(vec![finding("driver-too-new-for-gpu", "legacy GPU", &[])]);
    let e = run(
        &report,
        "RuntimeError: CUDA error: an illegal memory access was encountered\n",
    );
    assert_eq!(e.cause, None);
}

#[test]
fn a_finding_about_another_framework_does_not_explain_a_framework_s_message() {
    let tf_only = machine(vec![finding(
        "cpu-only-framework-build",
        "tensorflow-cpu",
        &["framework:/venv:tensorflow"],
    )]);
    let text = "AssertionError: Torch not compiled with CUDA enabled";
    assert_eq!(run(&tf_only, text).cause, None);
    let torch_too = machine(vec![
        finding(
            "cpu-only-framework-build",
            "tensorflow-cpu",
            &["framework:/venv:tensorflow"],
        ),
        finding(
            "cpu-only-framework-build",
            "torch+cpu",
            &["framework:/venv:torch"],
        ),
    ]);
    let e = run(&torch_too, text);
    assert_eq!(e.cause.as_deref(), Some("cpu-only-framework-build"));
}

#[test]
fn the_finding_naming_the_message_s_library_wins() {
    let report = machine(vec![
        finding("library-not-found", "torch needs libcudart.so.12", &[]),
        finding(
            "cudnn-missing",
            "TensorFlow needs cuDNN 8 (libcudnn.so.8)",
            &[],
        ),
    ]);
    let e = run(
        &report,
        "ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory",
    );
    assert_eq!(ids(&e), ["loader-cudnn-missing"]);
    assert_eq!(e.cause.as_deref(), Some("cudnn-missing"));
    let report = machine(vec![
        finding("library-not-found", "a module needs libcublas.so.11", &[]),
        finding("library-not-found", "a module needs libcudart.so.11.0", &[]),
    ]);
    let e = run(
        &report,
        "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory",
    );
    assert_eq!(ids(&e), ["loader-cuda-library-missing"]);
    assert_eq!(e.cause.as_deref(), Some("library-not-found"));
}

#[test]
fn colours_crlf_and_progress_bars_do_not_hide_a_message() {
    let text = "\u{1b}[31mTraceback\u{1b}[0m (most recent call last):\r\n 10%|#    |\r 90%|#########|\r\n\u{1b}[1;31mRuntimeError\u{1b}[0m: CUDA error: \u{1b}[33mno kernel image is available for execution on the device\u{1b}[0m\r\n";
    let e = run(&machine(Vec::new()), text);
    assert_eq!(ids(&e), ["cuda-no-kernel-image"]);
    assert!(
        !e.text.contains('\u{1b}') && !e.text.contains('\r'),
        "{:?}",
        e.text
    );
    assert_eq!(e.signatures[0].line, 4);
}

#[test]
fn a_message_a_terminal_wrapped_in_the_middle_of_a_word_is_recognised() {
    // A 40-column terminal cut the lines wherever they reached the edge.
    let full = "RuntimeError: CUDA error: no kernel image is available for execution on the device. CUDA kernel errors might be asynchronously reported at some other API call";
    let wrapped: Vec<String> = full
        .chars()
        .collect::<Vec<_>>()
        .chunks(40)
        .map(|c| c.iter().collect())
        .collect();
    let text = wrapped.join("\n");
    let e = run(&machine(Vec::new()), &text);
    assert_eq!(e.wrap_width, Some(40));
    assert_eq!(ids(&e), ["cuda-no-kernel-image"]);
    assert!(
        e.signatures[0].matched.contains('\n'),
        "{:?}",
        e.signatures[0].matched
    );
    assert!(e.text.contains(&e.signatures[0].matched));
    // Wrapped at spaces (a logger, a narrower paste): the spaces match line breaks.
    let e = run(
        &machine(Vec::new()),
        "Failed to initialize NVML: Driver/library\n    version mismatch",
    );
    assert_eq!(ids(&e), ["nvml-version-mismatch"]);
}

#[test]
fn other_languages_around_the_message_and_translated_loader_messages() {
    let e = run(
        &machine(Vec::new()),
        "运行时出错了，请帮忙看看：\nRuntimeError: CUDA error: no CUDA-capable device is detected\n谢谢！",
    );
    assert_eq!(ids(&e), ["cuda-no-device"]);
    let e = run(
        &machine(vec![finding("cudnn-missing", "cuDNN 8 missing", &[])]),
        "ImportError: libcudnn.so.8: 无法打开共享对象文件: 没有那个文件或目录",
    );
    assert_eq!(ids(&e), ["loader-cudnn-missing"]);
    assert_eq!(e.cause.as_deref(), Some("cudnn-missing"));
    let e = run(
        &machine(Vec::new()),
        "OSError: libcuda.so.1: Kann die Shared-Object-Datei nicht öffnen: Datei oder Verzeichnis nicht gefunden",
    );
    assert_eq!(ids(&e), ["loader-libcuda-missing"]);
}

#[test]
fn a_message_about_another_gpu_or_driver_says_so() {
    let e = run(
        &machine(Vec::new()),
        "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
    );
    assert!(
        e.signatures[0].notes[0].contains("printed on another machine"),
        "{:?}",
        e.signatures[0].notes
    );
    let mut report = machine(Vec::new());
    report.driver.cuda_version = Some("13.0".to_string());
    let e = run(
        &report,
        "The NVIDIA driver on your system is too old (found version 12080).",
    );
    assert!(
        e.signatures[0].notes[0].contains("supports CUDA 12.8; this machine's supports CUDA 13.0"),
        "{:?}",
        e.signatures[0].notes
    );
}

#[test]
fn an_images_cuda_requirement_is_held_against_the_host_driver() {
    let refusal = "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, \
                   please update your driver to a newer version, or use an earlier cuda container: unknown.";
    let mut report = machine(Vec::new());
    report.driver.cuda_version = Some("12.4".to_string());
    let e = run(&report, refusal);
    assert_eq!(ids(&e), ["ctk-unsatisfied-cuda-requirement"]);
    assert!(
        e.signatures[0].notes.iter().any(|n| n.contains(
            "requires CUDA 12.8; this machine's driver supports CUDA 12.4: this driver is older"
        )),
        "{:?}",
        e.signatures[0].notes
    );
    report.driver.cuda_version = Some("13.0".to_string());
    let e = run(&report, refusal);
    assert!(
        e.signatures[0]
            .notes
            .iter()
            .any(|n| n.contains("which is enough")),
        "{:?}",
        e.signatures[0].notes
    );
}

#[test]
fn repeated_messages_are_counted_once_each() {
    let line = "RuntimeError: CUDA error: out of memory\n";
    let e = run(&machine(Vec::new()), &line.repeat(50));
    assert_eq!(ids(&e), ["cuda-out-of-memory"]);
    assert_eq!(e.signatures[0].count, 50);
    // A warning and its second line are one message.
    let e = run(
        &machine(Vec::new()),
        "NVIDIA H200 with CUDA capability sm_90 is not compatible with the current PyTorch installation.\nThe current PyTorch install supports CUDA capabilities sm_80.",
    );
    assert_eq!(e.signatures[0].count, 1);
}

#[test]
fn a_huge_log_is_cut_to_the_lines_around_its_messages() {
    let noise = "epoch 1 step 17 loss 0.2345 lr 3e-4 grad_norm 1.02 throughput 512 samples/s\n";
    let mut text = noise.repeat(20_000);
    text.push_str("RuntimeError: CUDA error: an illegal memory access was encountered\n");
    text.push_str(&noise.repeat(100));
    let e = run(&machine(Vec::new()), &text);
    assert!(e.text_cut);
    assert!(e.text.len() < 4096, "{}", e.text.len());
    assert!(
        e.text.starts_with("[... 19998 lines left out ...]\n"),
        "{}",
        &e.text[..80]
    );
    assert!(e.text.contains(&e.signatures[0].matched));
    assert_eq!(e.signatures[0].line, 20_001);
    assert_eq!(e.bytes_read, text.len() as u64);
}

#[test]
fn nothing_recognised_is_an_empty_answer() {
    let e = run(&machine(Vec::new()), "Segmentation fault (core dumped)\n");
    assert!(e.signatures.is_empty());
    assert_eq!(e.cause, None);
    let e = run(&machine(Vec::new()), "");
    assert!(e.signatures.is_empty());
}

#[test]
fn control_characters_never_reach_the_text() {
    let text = "a\u{0}b\u{7}c\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{7} \u{9b}2J\u{202e}RuntimeError: CUDA error: out of memory\u{8}";
    let e = run(&machine(Vec::new()), text);
    assert!(
        !e.text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{:?}",
        e.text
    );
    assert!(!e.text.contains('\u{202e}'));
    assert_eq!(ids(&e), ["cuda-out-of-memory"]);
}

#[test]
fn the_oom_advice_works_out_this_machine_s_gpu() {
    let e = run(
        &machine(Vec::new()),
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 139.81 GiB of which 11.62 MiB is free. Including non-PyTorch memory, this process has 100.13 GiB memory in use. Of the allocated memory 98.11 GiB is allocated by PyTorch, and 522.46 MiB is reserved by PyTorch but unallocated.",
    );
    assert_eq!(ids(&e), ["torch-out-of-memory"]);
    let notes = &e.signatures[0].notes;
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("Other processes held about 39.7 GiB")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("NVIDIA H200") && n.contains("9.4B parameters")),
        "{notes:?}"
    );
}

mod props {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any bytes: no panic, every match a slice of the text, no control character kept.
        #[test]
        fn any_bytes_are_read_safely(bytes in proptest::collection::vec(any::<u8>(), 0..2048), splice in 0usize..2048) {
            let mut bytes = bytes;
            let at = splice.min(bytes.len());
            let message = b"CUDA error: no kernel image is available for execution on the device \xe2\x80\x8f libcudnn.so.8: cannot open shared object file";
            bytes.splice(at..at, message.iter().copied());
            let e = explain(&machine(Vec::new()), table(), &bytes, None);
            for s in &e.signatures {
                prop_assert!(e.text.contains(&s.matched));
            }
            prop_assert!(!e.text.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
        }
    }
}

#[test]
fn prefixes_quote_marks_emphasis_and_capitals_do_not_hide_a_message() {
    let report = machine(Vec::new());
    // A message a launcher split over two lines, each behind its rank.
    let e = run(
        &report,
        "[rank3]: UserWarning: CUDA initialization: The NVIDIA driver on your system is too old\n[rank3]: (found version 12040). Please update your GPU driver",
    );
    assert_eq!(ids(&e), ["torch-driver-too-old"]);
    assert_eq!(
        e.signatures[0].matched,
        "The NVIDIA driver on your system is too old\n[rank3]: (found version 12040)",
        "the quote is the user's text, prefixes and all"
    );
    // Quoted in a reply, bold, with a logger's capitals.
    for text in [
        "> > RuntimeError: **No CUDA GPUs are available**",
        "E1207 12:00:01.123456   77 main.cc:12] FAILED TO INITIALIZE NVML: DRIVER/LIBRARY\nE1207 12:00:01.123457   77 main.cc:12] VERSION MISMATCH",
        "2026-12-07 04:10:31,123 ERROR torch.cuda: Found no NVIDIA driver on\n2026-12-07 04:10:31,124 ERROR torch.cuda: your system",
        "Dec  7 04:10:31 gpu01 kernel: [  12.3] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen\nDec  7 04:10:31 gpu01 kernel: [  12.3] off the bus.",
    ] {
        let e = run(&report, text);
        assert_eq!(e.signatures.len(), 1, "{text:?}: {:?}", ids(&e));
        assert!(text.contains(&e.signatures[0].matched), "{text:?}");
    }
    // Typographic quotes (a web page's copy) read as the program's plain ones.
    let e = run(
        &report,
        "nvidia-smi: NVIDIA-SMI has failed because it couldn\u{2019}t communicate with the NVIDIA driver.",
    );
    assert_eq!(ids(&e), ["nvidia-smi-no-driver"]);
}

#[test]
fn a_text_of_nothing_but_markup_keeps_a_bounded_view() {
    // `**` between every letter and a prefix on every line: each would be a piece of the
    // view's map; past the bound the rest is taken verbatim and still explained.
    let mut text = "**a".repeat(400_000);
    text.push('\n');
    text.push_str(&"[rank1]: x\n".repeat(800_000));
    text.push_str(
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n",
    );
    let e = run(&machine(Vec::new()), &text);
    assert_eq!(ids(&e), ["cuda-no-kernel-image"]);
    assert_eq!(e.lines_read, 800_002);
}
