//! Tests over the embedded manifest set: it loads, it validates, lookups give the reference's
//! exact values, and broken copies of it fail with the right message.

use super::*;

/// The embedded set with one file's text changed by `edit`, for negative tests.
fn edited(file: &str, edit: impl Fn(&str) -> String) -> Vec<(&'static str, String)> {
    EMBEDDED
        .iter()
        .map(|&(name, text)| {
            (
                name,
                if name == file {
                    edit(text)
                } else {
                    text.to_string()
                },
            )
        })
        .collect()
}

/// Replaces `from` (which must occur) with `to`.
fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert!(
        text.contains(from),
        "test anchor {from:?} is not in the manifest"
    );
    text.replacen(from, to, 1)
}

fn load(files: &[(&'static str, String)]) -> Result<Manifests, ManifestError> {
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(name, text)| (*name, text.as_str()))
        .collect();
    from_sources(&borrowed)
}

fn problems_of(files: &[(&'static str, String)]) -> Vec<ManifestProblem> {
    validate(&load(files).expect("edited set still parses"))
}

fn messages(problems: &[ManifestProblem]) -> Vec<String> {
    problems.iter().map(ToString::to_string).collect()
}

#[test]
fn embedded_set_loads_and_has_no_problems() {
    let problems = validate(embedded());
    assert!(problems.is_empty(), "{:#?}", messages(&problems));
}

#[test]
fn every_file_lists_its_gaps() {
    let m = embedded();
    for (file, meta) in [
        ("cuda.toml", &m.cuda.meta),
        ("gpus.toml", &m.gpus.meta),
        ("frameworks.toml", &m.frameworks.meta),
        ("cudnn.toml", &m.cudnn.meta),
        ("install.toml", &m.install.meta),
        ("errors.toml", &m.errors.meta),
    ] {
        // errors.toml grew the signature table of `gpu-doctor explain` later.
        let updated = if file == "errors.toml" {
            "2026-12-02"
        } else {
            "2026-11-29"
        };
        assert_eq!(meta.updated, updated, "{file}");
        assert!(
            !meta.gaps.is_empty(),
            "{file} should say what its sources lacked"
        );
    }
}

// --- lookups: exact values from the reference ------------------------------------------------

#[test]
fn cuda_release_drivers() {
    let cuda = &embedded().cuda;
    let ga = cuda.min_driver_for("12.4").expect("12.4");
    assert_eq!(
        ga.release.version, "12.4.0",
        "a bare minor means its GA release"
    );
    assert_eq!(ga.toolkit_driver, Some("550.54.14"));
    assert_eq!(ga.minor_compat_floor, "525.60.13");
    assert_eq!(
        cuda.min_driver_for("12.4.1").and_then(|r| r.toolkit_driver),
        Some("550.54.15")
    );
    assert_eq!(
        cuda.min_driver_for("11.8").map(|r| r.minor_compat_floor),
        Some("450.80.02")
    );

    let newest_known = cuda.min_driver_for("13.4.1").expect("13.4");
    assert_eq!(newest_known.minor_compat_floor, "580.65.06");
    assert_eq!(
        newest_known.toolkit_driver, None,
        "the reference gives only the branch"
    );
    assert_eq!(newest_known.release.branch, Some(615));
    assert!(!cuda.release("13.5").expect("13.5").verified);

    assert!(
        cuda.min_driver_for("12.7").is_none(),
        "there is no CUDA 12.7 toolkit"
    );
}

#[test]
fn driver_to_highest_cuda() {
    let cuda = &embedded().cuda;
    assert_eq!(cuda.max_cuda_for_driver("580.159.04"), Some("13.0"));
    assert_eq!(cuda.max_cuda_for_driver("550.144.03"), Some("12.4"));
    assert_eq!(cuda.max_cuda_for_driver("565.57.01"), Some("12.7"));
    assert_eq!(
        cuda.max_cuda_for_driver("551.61"),
        Some("12.4"),
        "Windows numbers sit above their branch"
    );
    assert_eq!(cuda.max_cuda_for_driver("440.33.01"), None);
    // R620's 13.5 is inferred, so only the verified lower bound comes back.
    assert_eq!(cuda.max_cuda_for_driver("620.70.06"), Some("13.4"));
    let r620 = cuda.branch_for_driver("620.70.06").expect("R620 row");
    assert_eq!(
        (r620.branch, r620.max_cuda.as_str(), r620.verified),
        (620, "13.5", false)
    );
}

#[test]
fn architecture_support_per_cuda_major() {
    let cuda = &embedded().cuda;
    let cuda13 = cuda.major(13).expect("13");
    assert!(cuda13.targets("7.5"));
    assert!(!cuda13.targets("7.0"), "CUDA 13 removed Volta");
    assert!(cuda.major(12).expect("12").targets("5.0"));
    assert!(!cuda.major(12).expect("12").targets("3.7"));
    let volta = cuda.compute_capability("7.0").expect("7.0");
    assert_eq!(volta.last_driver_branch, Some(580));
    assert_eq!(
        cuda.compute_capability("12.0")
            .and_then(|row| row.first_cuda.as_deref()),
        Some("12.8")
    );
}

#[test]
fn h200_by_name() {
    let gpus = &embedded().gpus;
    let found = gpus.by_name("NVIDIA H200");
    let names: Vec<_> = found.iter().map(|gpu| gpu.name.as_str()).collect();
    assert_eq!(
        names,
        ["H200 SXM", "H200 NVL"],
        "nvidia-smi's name does not say the form factor"
    );
    assert!(found.iter().all(|gpu| gpu.compute_capability == "9.0"));

    let sxm = found[0];
    assert_eq!(sxm.memory_gb, [141]);
    assert_eq!(sxm.memory_type.as_deref(), Some("HBM3e"));
    assert_eq!(sxm.bandwidth_gbs, Some(4800.0));
    assert_eq!(sxm.tdp_w, Some(700));
    assert_eq!(
        sxm.tflops.bf16_tensor,
        Some(989.0),
        "dense, not the 1,979 sparse figure"
    );
    assert_eq!(sxm.segment, Segment::Datacenter);
    assert!(sxm.forward_compat);
}

/// What a real H200 machine printed (tests/data/h200) resolves through the tables.
#[test]
fn real_h200_capture_resolves() {
    let capture = include_str!("../../tests/data/h200/smi_csv.txt");
    let row = capture.lines().nth(2).expect("data row");
    let fields: Vec<_> = row.split(", ").collect();
    let (name, driver, cc) = (fields[1], fields[3], fields[5]);
    assert_eq!((name, driver, cc), ("NVIDIA H200", "580.159.04", "9.0"));

    let m = embedded();
    assert!(
        m.gpus
            .by_name(name)
            .iter()
            .all(|gpu| gpu.compute_capability == cc)
    );
    assert_eq!(m.cuda.max_cuda_for_driver(driver), Some("13.0"));
    assert!(m.cuda.major(13).expect("13").targets(cc));
    // The machine ran torch 2.11.0+cu130: CUDA 13.0 on a driver that reports 13.0.
    let torch = m
        .frameworks
        .torch("2.11.0+cu130", "cu130")
        .expect("torch build");
    assert!(
        torch
            .build
            .sass
            .as_deref()
            .unwrap_or_default()
            .iter()
            .any(|sm| sm == cc)
    );
}

#[test]
fn names_pick_the_most_specific_row() {
    let gpus = &embedded().gpus;
    let one = |reported: &str| {
        let found = gpus.by_name(reported);
        assert_eq!(
            found.len(),
            1,
            "{reported}: {:?}",
            found.iter().map(|g| &g.name).collect::<Vec<_>>()
        );
        found[0].name.clone()
    };
    assert_eq!(one("NVIDIA A100-SXM4-80GB"), "A100 80GB SXM4");
    assert_eq!(one("NVIDIA GeForce RTX 4070 Ti"), "GeForce RTX 4070 Ti");
    assert_eq!(one("NVIDIA GeForce RTX 4070"), "GeForce RTX 4070");
    assert_eq!(one("Tesla T4"), "Tesla T4");
    assert_eq!(one("NVIDIA A10"), "A10");
    assert!(
        !gpus
            .by_name("NVIDIA GeForce RTX 4090")
            .iter()
            .any(|gpu| gpu.forward_compat)
    );
    assert!(gpus.by_name("Matrox G200").is_empty());
}

#[test]
fn pci_ids_match_in_every_form_nvidia_smi_uses() {
    let gpus = &embedded().gpus;
    for form in ["0x2335", "0x233510DE", "2335", "0X2335"] {
        let gpu = gpus.by_pci_id(form).map(|gpu| gpu.name.as_str());
        assert_eq!(gpu, Some("H200 SXM"), "{form}");
    }
    let name = |id: &str| gpus.by_pci_id(id).map(|gpu| gpu.name.as_str());
    assert_eq!(name("0x102d"), Some("Tesla K80"));
    assert_eq!(name("0x20b2"), Some("A100 80GB SXM4"));
    assert_eq!(name("0x20F110DE"), Some("A100 40GB PCIe"));
    assert_eq!(name("0x1db1"), Some("Tesla V100 SXM2"));
    assert_eq!(name("0x1eb8"), Some("Tesla T4"));
    assert_eq!(name("0x2684"), Some("GeForce RTX 4090"));
    assert_eq!(name("0x2330"), Some("H100 SXM5"));
    // A2 and A16 share 0x25b6: only the subsystem (nvidia-smi's form) tells them apart.
    assert_eq!(name("0x25b6"), None);
    let by_sub = |id: &str, sub: &str| gpus.by_pci(id, Some(sub)).map(|gpu| gpu.name.as_str());
    assert_eq!(by_sub("0x25b6", "0x157E10DE"), Some("A2"));
    assert_eq!(by_sub("0x25B610DE", "0x14a910de"), Some("A16"));
    assert_eq!(by_sub("0x25b6", "0x000010de"), None);
    // One product keeps an id's other subsystems: the Quadro RTX 6000 on 0x1e30.
    assert_eq!(by_sub("0x1e30", "0x129e10de"), Some("Quadro RTX 8000"));
    assert_eq!(by_sub("0x1e30", "0x12ba10de"), Some("Quadro RTX 6000"));
    // H100 80GB HBM2e: NVIDIA's table names no form factor, so no row claims it.
    assert!(gpus.by_pci_id("0x2336").is_none());
}

#[test]
fn duplicate_pci_subsystem_is_reported() {
    let files = edited("gpus.toml", |text| {
        replace_once(
            text,
            "pci_subsystems = [[\"0x25b6\", \"10de:157e\"]]",
            "pci_subsystems = [[\"0x25b6\", \"10de:157e\"], [\"0x25b6\", \"10de:14a9\"]]",
        )
    });
    assert_eq!(
        messages(&problems_of(&files)),
        ["gpus.toml: gpu \"A2\": duplicate PCI subsystem 0x25b6 10de:14a9"]
    );
}

#[test]
fn torch_builds() {
    let frameworks = &embedded().frameworks;
    let found = frameworks
        .torch("2.11.0+cu130", "cu130")
        .expect("2.11 cu130");
    assert_eq!(found.build.cudnn.as_deref(), Some("9.19.0.56"));
    assert_eq!(found.build.nccl.as_deref(), Some("2.28.9"));
    assert_eq!(found.build.cuda().as_deref(), Some("13.0"));
    assert_eq!(
        found.build.ptx.as_deref(),
        Some(&[][..]),
        "measured: no compute_120 in the PyPI wheel"
    );
    assert_eq!(found.release.pypi_default, "cu130");
    assert_eq!(
        frameworks.torch_index_url("cu130"),
        "https://download.pytorch.org/whl/cu130"
    );

    let old = frameworks.torch("2.1.2", "cu121").expect("2.1 cu121");
    assert_eq!(old.release.version, "2.1", "2.1 is not 2.10");
    assert_eq!(old.build.cudnn.as_deref(), Some("8.9.2.26"));
    assert!(frameworks.torch("2.10.0", "cu128").is_some());
    assert!(
        frameworks.torch("2.12.0", "cu128").is_none(),
        "2.12 dropped cu128"
    );
    let cu126 = frameworks.torch("2.14.1", "cu126").expect("2.14 cu126");
    assert!(
        cu126
            .build
            .sass
            .as_deref()
            .unwrap_or_default()
            .contains(&"6.0".to_string())
    );
}

#[test]
fn other_frameworks() {
    let frameworks = &embedded().frameworks;
    let tf = frameworks.tensorflow("2.16.2").expect("TF 2.16");
    assert_eq!((tf.cuda.as_str(), tf.cudnn.as_str()), ("12.3", "8.9"));
    assert_eq!(
        frameworks
            .tensorflow_and_cuda("2.18.1")
            .map(|row| row.cudnn.as_str()),
        Some("==9.3.0.75")
    );

    assert_eq!(
        frameworks
            .jax("0.6.2", 12)
            .and_then(|row| row.cudnn.as_deref()),
        Some(">=9.8,<10.0")
    );
    assert_eq!(
        frameworks
            .jax("0.11.2", 13)
            .and_then(|row| row.driver_min.as_deref()),
        Some("580")
    );
    assert!(frameworks.jax("0.4.30", 13).is_none());
    assert_eq!(
        frameworks
            .jax_extra("cuda13")
            .and_then(|row| row.min_sm.as_deref()),
        Some("7.5")
    );

    let cupy = frameworks.cupy("14.0.0").expect("CuPy 14");
    assert_eq!(
        (cupy.cuda_min.as_str(), cupy.cuda_max.as_str()),
        ("12.0", "13.1")
    );
    assert_eq!(
        frameworks
            .cupy_package("cupy-cuda11x")
            .and_then(|p| p.removed_in.as_deref()),
        Some("14.0.0")
    );

    let cudnn13 = frameworks
        .pip_wheel("nvidia_cudnn_cu13")
        .expect("pip names ignore _ vs -");
    assert_eq!(cudnn13.lib_dir.as_deref(), Some("nvidia/cudnn/lib"));
    assert_eq!(
        frameworks
            .pip_wheel("nvidia-cublas")
            .and_then(|w| w.lib_dir.as_deref()),
        Some("nvidia/cu13/lib")
    );
}

#[test]
fn cudnn_releases() {
    let cudnn = &embedded().cudnn;
    let release = cudnn.release("9.10.2.21").expect("9.10.2");
    let drivers: Vec<_> = release
        .builds_for("12.8")
        .filter_map(|b| b.driver_min.as_deref())
        .collect();
    assert_eq!(drivers, ["570.26", "525.60.13"]);
    assert_eq!(release.builds_for("11.8").count(), 1);
    let newest_matrix = cudnn.release("9.17.0").expect("9.17.0");
    assert_eq!(
        newest_matrix.builds_for("11.8").count(),
        0,
        "9.17 has no CUDA 11 build"
    );
    assert!(newest_matrix.builds_for("13.1").next().is_some());
    assert_eq!(
        cudnn.release("9.5.0").map(|r| r.version.as_str()),
        Some("9.5.1")
    );
    assert_eq!(cudnn.soname(9), Some("libcudnn.so.9"));
    assert!(cudnn.release("9.12.0").is_none());
}

#[test]
fn install_names() {
    let install = &embedded().install;
    let toolkit = install
        .apt_package("cuda-toolkit-minor")
        .expect("toolkit pattern");
    assert_eq!(
        toolkit.fill(&[("major", "12"), ("minor", "4")]).as_deref(),
        Ok("cuda-toolkit-12-4")
    );
    assert_eq!(toolkit.includes_driver, Some(false));
    let repo = install
        .apt_repo("ubuntu2204", "x86_64")
        .expect("22.04 repo");
    assert_eq!(
        repo.url,
        "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/"
    );
    assert_eq!(install.apt_keyring.deb, "cuda-keyring_1.1-1_all.deb");
    assert_eq!(
        install
            .driver_flavor("open")
            .and_then(|f| f.min_sm.as_deref()),
        Some("7.5")
    );
}

#[test]
fn known_errors_match_pasted_text() {
    let errors = &embedded().errors;
    let ids = |text: &str| -> Vec<String> {
        errors
            .matching(text)
            .into_iter()
            .map(|(e, _)| e.id.clone())
            .collect()
    };
    let log =
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n";
    assert_eq!(ids(log), ["cuda-no-kernel-image"]);
    assert_eq!(
        ids("Error 804: forward compatibility was attempted on non supported HW"),
        ["cuda-compat-unsupported"]
    );
    // By number alone, in each form the CUDA runtime and its callers print it.
    for text in [
        "CUDA error 802",
        "cuda runtime error (802) : x",
        "CUDA failure 802: x",
        "CUDA Error: 802",
    ] {
        assert_eq!(ids(text), ["cuda-system-not-ready"], "{text}");
    }
    assert!(ids("CUDA error 8020").is_empty());
    assert_eq!(
        ids("[ 12.3] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."),
        ["xid-fallen-off-the-bus", "xid-other"]
    );
    assert_eq!(
        errors
            .by_id("cuda-insufficient-driver")
            .map(|e| e.cuda_codes.clone()),
        Some(vec![35])
    );
}

#[test]
fn duplicate_cuda_version_is_reported() {
    let files = edited("cuda.toml", |text| {
        replace_once(text, "version = \"12.4.1\"", "version = \"12.4.0\"")
    });
    let problems = problems_of(&files);
    assert_eq!(
        messages(&problems),
        ["cuda.toml: release 12.4.0: duplicate CUDA version 12.4.0"]
    );
    assert_eq!(problems[0].kind, ProblemKind::Duplicate);
}

#[test]
fn duplicate_torch_variant_is_reported() {
    let files = edited("frameworks.toml", |text| {
        replace_once(
            text,
            "variant = \"cu128\"\ncudnn = \"9.17.1.4\"",
            "variant = \"cu126\"\ncudnn = \"9.17.1.4\"",
        )
    });
    assert_eq!(
        messages(&problems_of(&files)),
        ["frameworks.toml: torch 2.11 build cu126: duplicate torch variant 2.11 cu126"]
    );
}

#[test]
fn duplicate_pci_id_is_reported() {
    let files = edited("gpus.toml", |text| {
        replace_once(
            text,
            "name = \"H200 NVL\"\npci_device_ids = [\"0x233b\"]",
            "name = \"H200 NVL\"\npci_device_ids = [\"0x233b\", \"0x2335\"]",
        )
    });
    assert_eq!(
        messages(&problems_of(&files)),
        ["gpus.toml: gpu \"H200 NVL\": duplicate PCI device id 0x2335"]
    );
}

#[test]
fn malformed_pci_id_is_reported() {
    let files = edited("gpus.toml", |text| {
        replace_once(
            text,
            "name = \"H200 NVL\"\npci_device_ids = [\"0x233b\"]",
            "name = \"H200 NVL\"\npci_device_ids = [\"0x233B10DE\"]",
        )
    });
    let problems = problems_of(&files);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].kind, ProblemKind::BadPciId);
}

#[test]
fn empty_source_is_reported() {
    let sourced = "source = \"microsoft/pai#2962; ApolloAuto/apollo#2466; negativo17/nvidia-driver#73; NVIDIA/k8s-driver-manager#37; linuxmint/cinnamon#7611\"";
    let files = edited("errors.toml", |text| {
        replace_once(text, sourced, "source = \" \"")
    });
    let problems = problems_of(&files);
    assert_eq!(
        messages(&problems),
        ["errors.toml: error nouveau-in-use: source is empty"]
    );
    assert_eq!(problems[0].kind, ProblemKind::MissingSource);
}

#[test]
fn unsorted_list_is_reported() {
    let files = edited("cuda.toml", |text| {
        replace_once(text, "version = \"12.4.1\"", "version = \"12.3.5\"")
    });
    let problems = problems_of(&files);
    assert_eq!(
        messages(&problems),
        [
            "cuda.toml: release 12.3.5: CUDA version 12.3.5 comes after 12.4.0; the list must be ascending"
        ]
    );
    assert_eq!(problems[0].kind, ProblemKind::NotSorted);
}

#[test]
fn bad_version_and_date_are_reported() {
    let files = edited("cudnn.toml", |text| {
        let text = replace_once(text, "version = \"9.17.0\"", "version = \"9.17.x\"");
        replace_once(
            &text,
            "updated = \"2026-11-29\"",
            "updated = \"29 Nov 2026\"",
        )
    });
    let problems = problems_of(&files);
    let kinds: Vec<_> = problems.iter().map(|p| p.kind).collect();
    assert!(
        kinds.contains(&ProblemKind::Meta),
        "{:?}",
        messages(&problems)
    );
    assert!(messages(&problems).contains(
        &"cudnn.toml: release 9.17.x: version `9.17.x` is not a dotted numeric version".to_string()
    ));
}

#[test]
fn missing_source_field_is_a_parse_error_naming_file_and_line() {
    let files = edited("cudnn.toml", |text| {
        replace_once(
            text,
            "source = \"https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-830/pdf/cuDNN-Support-Matrix.pdf\"\n",
            "",
        )
    });
    let message = load(&files).unwrap_err().to_string();
    assert!(
        message.starts_with("cudnn.toml: TOML parse error at line "),
        "{message}"
    );
    assert!(message.contains("missing field `source`"), "{message}");
}

#[test]
fn malformed_toml_is_a_parse_error() {
    let files = edited("gpus.toml", |text| {
        replace_once(text, "[[gpu]]\nname = \"A10\"", "[[gpu]\nname = \"A10\"")
    });
    let error = load(&files).unwrap_err();
    assert!(
        matches!(
            error,
            ManifestError::Parse {
                file: "gpus.toml",
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("line "), "{error}");
}

#[test]
fn unknown_field_is_a_parse_error() {
    let files = edited("frameworks.toml", |text| {
        replace_once(text, "[torch_index]\n", "[torch_index]\nmirror = \"x\"\n")
    });
    let message = load(&files).unwrap_err().to_string();
    assert!(message.contains("unknown field `mirror`"), "{message}");
}

#[test]
fn other_schema_is_refused_by_name() {
    let files = edited("install.toml", |text| {
        let text = replace_once(text, "schema = 1", "schema = 2");
        replace_once(&text, "[paths]\n", "[paths]\nnew_in_schema_2 = true\n")
    });
    assert_eq!(
        load(&files).unwrap_err().to_string(),
        "install.toml: schema 2 is not supported (this build reads schema 1)"
    );
}

#[test]
fn file_set_errors() {
    let mut files = edited("cuda.toml", str::to_string);
    files.retain(|(name, _)| *name != "errors.toml");
    assert_eq!(
        load(&files).unwrap_err().to_string(),
        "manifest file `errors.toml` is missing from the set"
    );

    let mut files = edited("cuda.toml", str::to_string);
    files.push(("manifests/cuda.toml", String::new()));
    assert_eq!(
        load(&files).unwrap_err().to_string(),
        "manifest file `cuda.toml` is given more than once"
    );

    let mut files = edited("cuda.toml", str::to_string);
    files.push(("gpu.toml", String::new()));
    let message = load(&files).unwrap_err().to_string();
    assert!(
        message.starts_with("`gpu.toml` is not a manifest file (expected one of: cuda.toml,"),
        "{message}"
    );
}

#[test]
fn paths_in_file_names_are_accepted() {
    let files: Vec<_> = EMBEDDED
        .iter()
        .map(|&(name, text)| (format!("manifests/{name}"), text))
        .collect();
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(name, text)| (name.as_str(), *text))
        .collect();
    assert!(from_sources(&borrowed).is_ok());
}

/// An updater writes sets back out: what serializes must load and validate unchanged.
#[test]
fn tables_round_trip_through_toml() {
    let m = embedded();
    let texts = [
        (CudaTable::FILE, toml::to_string(&m.cuda)),
        (GpuTable::FILE, toml::to_string(&m.gpus)),
        (FrameworkTable::FILE, toml::to_string(&m.frameworks)),
        (CudnnTable::FILE, toml::to_string(&m.cudnn)),
        (InstallTable::FILE, toml::to_string(&m.install)),
        (ErrorTable::FILE, toml::to_string(&m.errors)),
        (GpuIdTable::FILE, toml::to_string(&m.gpu_ids)),
        (AmdGpuIdTable::FILE, toml::to_string(&m.amd_gpu_ids)),
        (RocmTable::FILE, toml::to_string(&m.rocm)),
        (RepoTable::FILE, toml::to_string(&m.repos)),
        (PypiTable::FILE, toml::to_string(&m.pypi)),
        (ExtensionArchTable::FILE, toml::to_string(&m.extension_arch)),
    ]
    .map(|(file, text)| (file, text.unwrap_or_else(|e| panic!("{file}: {e}"))));
    let again = load(&texts).expect("serialized set loads");
    assert!(validate(&again).is_empty());
    assert_eq!(again.cuda.releases.len(), m.cuda.releases.len());
    assert_eq!(again.gpus.gpus.len(), m.gpus.gpus.len());
    assert_eq!(
        again.gpu_ids.devices.rows.len(),
        m.gpu_ids.devices.rows.len()
    );
    assert_eq!(
        again.amd_gpu_ids.devices.rows.len(),
        m.amd_gpu_ids.devices.rows.len()
    );
    assert_eq!(again.rocm.torch_targets, m.rocm.torch_targets);
    let before: usize = m.frameworks.torch.iter().map(|r| r.builds.len()).sum();
    let after: usize = again.frameworks.torch.iter().map(|r| r.builds.len()).sum();
    assert_eq!(before, after);
}

#[test]
fn torch_arch_lists_before_1_12_come_from_the_build_script_rows() {
    let m = crate::manifest::embedded();
    // torch 1.9.0+cu111 as a user's get_arch_list() printed it (meituan/YOLOv6#350):
    // sm_37 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86.
    let b = m
        .frameworks
        .torch_old_build("1.9.0+cu111", "cu111")
        .expect("a row");
    assert_eq!(
        b.sass.as_deref().unwrap(),
        ["3.7", "5.0", "6.0", "7.0", "7.5", "8.0", "8.6"]
    );
    // cu102 wheels: sm_37 sm_50 sm_60 sm_70 (pytorch/pytorch#45028, an A100 on such a build).
    let b = m
        .frameworks
        .torch_old_build("1.10.2", "cu102")
        .expect("a row");
    assert_eq!(b.sass.as_deref().unwrap(), ["3.7", "5.0", "6.0", "7.0"]);
    assert!(m.frameworks.torch_old_build("1.3.1", "cu101").is_none());
    assert!(m.frameworks.torch_old_build("1.12.0", "cu113").is_none());
}

/// The generated data-center list covers the China-market parts no hand-kept row had, and
/// keeps GeForce, workstation and mining cards out (NVIDIA's compatibility guide: forward
/// compatibility on data-center GPUs only).
#[test]
fn forward_compat_ids_cover_every_data_center_part() {
    let ids = &embedded().gpu_ids;
    for (id, what) in [
        (0x2329, "H20"),
        (0x2324, "H800"),
        (0x20f3, "A800 SXM4 80GB"),
        (0x26ba, "L20"),
        (0x27b6, "L2"),
        (0x2237, "A10G"),
        (0x2321, "H100 NVL"),
        (0x1eb8, "Tesla T4"),
        (0x1eb4, "T4G"),
        (0x2bb5, "RTX PRO 6000 Blackwell Server Edition"),
    ] {
        assert_eq!(ids.forward_compat(id), Some(true), "{what}");
    }
    for (id, what) in [
        (0x2684, "GeForce RTX 4090"),
        (0x2b85, "GeForce RTX 5090"),
        (0x2230, "RTX A6000"),
        (0x1fb0, "T1000"),
        (0x20c2, "CMP 170HX"),
    ] {
        assert_eq!(ids.forward_compat(id), Some(false), "{what}");
    }
    assert_eq!(ids.forward_compat(0xfffe), None, "an id no row has");
}

/// gpus.toml's hand-kept flag must agree with the generated list: a row saying a data-center
/// part cannot use the compat package is refused by validation.
#[test]
fn a_gpu_row_contradicting_the_generated_forward_compat_list_is_refused() {
    let mut m = embedded().clone();
    let t4 = m
        .gpus
        .gpus
        .iter_mut()
        .find(|g| g.name == "Tesla T4")
        .expect("T4 row");
    t4.forward_compat = false;
    t4.segment = Segment::Workstation;
    let problems = validate(&m);
    assert!(
        problems
            .iter()
            .any(|p| p.message.contains("[forward_compat]") && p.row.contains("Tesla T4")),
        "{problems:#?}"
    );
}

/// The module-flavour table: the open modules from Turing on, the proprietary ones up to Hopper,
/// Grace Hopper by name on the open modules only.
#[test]
fn kernel_module_flavours_come_from_the_table() {
    let cuda = &embedded().cuda;
    let f = |name: &str, cc: &str| cuda.module_flavours_for(Some(name), cc);
    assert_eq!(f("Tesla P4", "6.1"), Some((false, true)));
    assert_eq!(f("Tesla V100-SXM2-16GB", "7.0"), Some((false, true)));
    assert_eq!(f("Tesla T4", "7.5"), Some((true, true)));
    assert_eq!(f("NVIDIA H100 80GB HBM3", "9.0"), Some((true, true)));
    assert_eq!(f("NVIDIA GH200 480GB", "9.0"), Some((true, false)));
    assert_eq!(f("NVIDIA B200", "10.0"), Some((true, false)));
    assert_eq!(f("NVIDIA GeForce RTX 5090", "12.0"), Some((true, false)));
    assert_eq!(f("NVIDIA GeForce GTX 680", "2.1"), None, "Fermi: no row");
}
