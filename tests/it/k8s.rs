//! `manifests/k8s/`: the DaemonSet that feeds node_exporter's textfile collector and the
//! one-off fleet Job. Every YAML document is parsed, the fields a cluster depends on are
//! checked (selector and labels, no GPU request but the nvidia runtime class and every GPU
//! visible, taint toleration, the node's `/` read-only at /host, the hostPath behind `-o`,
//! security context, the Job's one-pod-per-node rules), and the gpu-doctor command each
//! container runs is run for real with `--host-root` on a node fixture
//! (`tests/fixtures/k8s-node-host-root`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde::Deserialize;
use serde_yaml_ng::Value;

use crate::host_root::on_node;
use crate::support::{Out, fixture_dir};

/// The documents of a YAML file of the repository.
pub(crate) fn documents(relative: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| Value::deserialize(doc).unwrap_or_else(|e| panic!("{relative}: not YAML: {e}")))
        .filter(|v| !v.is_null())
        .collect()
}

/// The value at a path of keys separated by `.` (`"3"` indexes a sequence); panics naming the
/// path when absent. Keys with a dot of their own (`nvidia.com/gpu`) are read with `get`.
#[track_caller]
pub(crate) fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    let mut cur = v;
    for key in path.split('.') {
        let next = match (cur, key.parse::<usize>()) {
            (Value::Sequence(s), Ok(i)) => s.get(i),
            _ => cur.get(key),
        };
        cur = next.unwrap_or_else(|| panic!("no {path} (stopped at {key}) in {v:?}"));
    }
    cur
}

#[track_caller]
pub(crate) fn text<'a>(v: &'a Value, path: &str) -> &'a str {
    at(v, path)
        .as_str()
        .unwrap_or_else(|| panic!("{path} is not a string"))
}

/// A number, whether YAML wrote it as `1` or `"1"` (Kubernetes quantities are either).
#[track_caller]
fn number(v: &Value, path: &str) -> f64 {
    let v = at(v, path);
    v.as_f64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| panic!("{path} is not a number: {v:?}"))
}

fn string_map(v: &Value, path: &str) -> BTreeMap<String, String> {
    at(v, path)
        .as_mapping()
        .unwrap_or_else(|| panic!("{path} is not a mapping"))
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().expect("string key").to_string(),
                v.as_str()
                    .unwrap_or_else(|| panic!("{path}: a value that is not a string: {v:?}"))
                    .to_string(),
            )
        })
        .collect()
}

/// The words of one shell command line as `sh` would split it: single and double quotes,
/// `$NAME` expanded from `env`, and it stops at the first operator or redirection (`>`, `2>`,
/// `|`, `||`, `&&`, `;`). Enough for the examples, which keep their commands this simple.
pub(crate) fn words(line: &str, env: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.trim().chars().peekable();
    let expand = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, word: &mut String| {
        let mut name = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_ascii_alphanumeric() || c == '_' {
                name.push(c);
                chars.next();
            } else {
                break;
            }
        }
        word.push_str(
            env.get(&name)
                .unwrap_or_else(|| panic!("${name} is not set in {line:?}")),
        );
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '$' => expand(&mut chars, &mut word),
                        '\\' => word.extend(chars.next()),
                        c => word.push(c),
                    }
                }
            }
            '$' => {
                in_word = true;
                expand(&mut chars, &mut word);
            }
            '>' | '<' | '|' | '&' | ';' => {
                // `2>file`: the digits were a file descriptor, not a word.
                if in_word && !word.chars().all(|c| c.is_ascii_digit()) {
                    out.push(word);
                }
                return out;
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// The lines of a script that run gpu-doctor.
pub(crate) fn gpu_doctor_lines(script: &str) -> Vec<&str> {
    script
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("gpu-doctor "))
        .collect()
}

/// The value of `-o`/`--output` among the words.
pub(crate) fn output_of(words: &[String]) -> Option<&str> {
    words
        .iter()
        .position(|w| w == "-o" || w == "--output")
        .and_then(|i| words.get(i + 1))
        .map(String::as_str)
}

/// Runs gpu-doctor with `args` (the words after `gpu-doctor`) on a fixture machine, in `cwd`.
pub(crate) fn run_on_fixture(fixture: &str, args: &[String], cwd: &Path) -> Output {
    crate::support::on_fixture(fixture, &[], args, Some(cwd))
}

/// Runs a workload's gpu-doctor words (after `gpu-doctor`) as its pod would on a node: the
/// `--host-root /host` they carry pointed at the node fixture's root instead.
fn run_on_node(mut args: Vec<String>, cwd: &Path) -> Out {
    let at = args
        .iter()
        .position(|w| w == "--host-root")
        .expect("the command examines the node with --host-root");
    assert_eq!(args[at + 1], "/host", "the mount path");
    args.drain(at..at + 2);
    on_node(
        &fixture_dir(crate::host_root::NODE).join("root"),
        &args,
        cwd,
    )
}

fn kinds(docs: &[Value]) -> Vec<&str> {
    docs.iter().map(|d| text(d, "kind")).collect()
}

fn only<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = docs.iter().filter(|d| text(d, "kind") == kind).collect();
    assert_eq!(found.len(), 1, "one {kind}");
    found[0]
}

/// The one container of a pod template, and its env as a map; a value from the downward API
/// reads `fieldRef:<fieldPath>`.
fn container(workload: &Value) -> (&Value, BTreeMap<String, String>) {
    let containers = at(workload, "spec.template.spec.containers")
        .as_sequence()
        .expect("containers");
    assert_eq!(containers.len(), 1, "one container");
    let c = &containers[0];
    let env = c
        .get("env")
        .and_then(Value::as_sequence)
        .map(|list| {
            list.iter()
                .map(|e| {
                    let value = match e.get("valueFrom") {
                        Some(from) => format!("fieldRef:{}", text(from, "fieldRef.fieldPath")),
                        None => text(e, "value").to_string(),
                    };
                    (text(e, "name").to_string(), value)
                })
                .collect()
        })
        .unwrap_or_default();
    (c, env)
}

/// The `sh -c` script a container runs.
fn script(c: &Value) -> &str {
    let command: Vec<&str> = at(c, "command")
        .as_sequence()
        .expect("command")
        .iter()
        .map(|v| v.as_str().expect("string"))
        .collect();
    assert_eq!(command[..2], ["/bin/sh", "-c"], "a shell script");
    command[2]
}

/// What every gpu-doctor workload shares: namespace (allowing hostPath), labels and selector,
/// GPU nodes only, the GPU taint tolerated, NO GPU asked for but the nvidia runtime class with
/// every GPU visible, the node's `/` read-only at /host, resources bounded, the placeholder
/// image, and a container that cannot gain privileges.
fn check_gpu_workload(docs: &[Value], workload: &Value) {
    let ns = only(docs, "Namespace");
    assert_eq!(
        text(workload, "metadata.namespace"),
        text(ns, "metadata.name"),
        "the workload is in the namespace the file makes"
    );
    let template_labels = string_map(workload, "spec.template.metadata.labels");
    let pod = at(workload, "spec.template.spec");
    check_gpu_scheduling(pod);
    let (c, env) = container(workload);
    check_gpu_access(pod, c, &env);
    assert!(pod.get("hostPID").is_none() && pod.get("hostNetwork").is_none());
    assert_eq!(
        string_map(ns, "metadata.labels")
            .get("pod-security.kubernetes.io/enforce")
            .map(String::as_str),
        Some("privileged"),
        "hostPath volumes need a namespace that allows them"
    );
    check_host_mount(workload, c);
    check_hardening(workload, c);
    assert!(!template_labels.is_empty());
}

/// GPU nodes only, their taint tolerated; the default seccomp profile, no service account.
fn check_gpu_scheduling(pod: &Value) {
    assert_eq!(
        string_map(pod, "nodeSelector").get("nvidia.com/gpu.present"),
        Some(&"true".to_string()),
        "GPU nodes only"
    );
    let tolerations = at(pod, "tolerations").as_sequence().expect("tolerations");
    assert!(
        tolerations
            .iter()
            .any(|t| text(t, "key") == "nvidia.com/gpu"
                && text(t, "effect") == "NoSchedule"
                && text(t, "operator") == "Exists"),
        "tolerates the nvidia.com/gpu NoSchedule taint: {tolerations:?}"
    );
    assert_eq!(
        text(pod, "securityContext.seccompProfile.type"),
        "RuntimeDefault"
    );
    assert_eq!(
        at(pod, "automountServiceAccountToken").as_bool(),
        Some(false)
    );
}

/// No GPU held, yet every GPU visible through the nvidia runtime class with the capabilities
/// NVML and the smoke test need; reports name the node.
fn check_gpu_access(pod: &Value, c: &Value, env: &BTreeMap<String, String>) {
    assert_eq!(
        env.get("GPU_DOCTOR_HOSTNAME").map(String::as_str),
        Some("fieldRef:spec.nodeName"),
        "reports name the node, not the pod"
    );
    for kind in ["limits", "requests"] {
        assert!(
            at(c, &format!("resources.{kind}"))
                .get("nvidia.com/gpu")
                .is_none(),
            "no GPU is held: resources.{kind} asks for nvidia.com/gpu"
        );
    }
    assert_eq!(text(pod, "runtimeClassName"), "nvidia");
    assert_eq!(
        env.get("NVIDIA_VISIBLE_DEVICES").map(String::as_str),
        Some("all")
    );
    assert_eq!(
        env.get("NVIDIA_DRIVER_CAPABILITIES").map(String::as_str),
        Some("utility,compute"),
        "NVML and nvidia-smi (utility), libcuda for smoke (compute)"
    );
}

/// The node's / at /host, read-only, as --host-root expects.
fn check_host_mount(workload: &Value, c: &Value) {
    let host = volume_mounts(workload)
        .remove("/host")
        .expect("the node's / mounted at /host");
    assert_eq!(text(&host, "hostPath.path"), "/");
    let mount = at(c, "volumeMounts")
        .as_sequence()
        .expect("mounts")
        .iter()
        .find(|m| text(m, "mountPath") == "/host")
        .expect("the /host mount");
    assert_eq!(at(mount, "readOnly").as_bool(), Some(true));
    assert_eq!(text(mount, "recursiveReadOnly"), "IfPossible");
}

/// The placeholder image, bounded resources, a container that cannot gain privileges, and a
/// writable /tmp under the read-only root.
fn check_hardening(workload: &Value, c: &Value) {
    for key in ["cpu", "memory"] {
        at(c, &format!("resources.requests.{key}"));
        at(c, &format!("resources.limits.{key}"));
    }
    let image = text(c, "image");
    assert_eq!(
        image,
        format!(
            "registry.example.invalid/gpu-doctor:{}",
            env!("CARGO_PKG_VERSION")
        ),
        "the obvious placeholder, tagged with this version"
    );
    let sc = at(c, "securityContext");
    assert_eq!(at(sc, "allowPrivilegeEscalation").as_bool(), Some(false));
    assert_eq!(at(sc, "readOnlyRootFilesystem").as_bool(), Some(true));
    assert_eq!(at(sc, "privileged").as_bool(), Some(false));
    let drop: Vec<&str> = at(sc, "capabilities.drop")
        .as_sequence()
        .expect("drop")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(drop, ["ALL"]);
    assert!(sc.get("capabilities").and_then(|c| c.get("add")).is_none());
    // The read-only root needs a writable /tmp.
    let mounts = volume_mounts(workload);
    assert_eq!(
        mounts.get("/tmp").map(|v| v.get("emptyDir").is_some()),
        Some(true),
        "/tmp is an emptyDir"
    );
}

/// Each volume mount's path and the volume behind it.
fn volume_mounts(workload: &Value) -> BTreeMap<String, Value> {
    let (c, _) = container(workload);
    let volumes = at(workload, "spec.template.spec.volumes")
        .as_sequence()
        .expect("volumes");
    at(c, "volumeMounts")
        .as_sequence()
        .expect("volumeMounts")
        .iter()
        .map(|m| {
            let name = text(m, "name");
            let volume = volumes
                .iter()
                .find(|v| text(v, "name") == name)
                .unwrap_or_else(|| panic!("volume {name} is mounted but not defined"));
            (text(m, "mountPath").to_string(), volume.clone())
        })
        .collect()
}

#[test]
fn the_daemonset_runs_one_pod_per_gpu_node_feeding_the_textfile_collector() {
    let docs = documents("manifests/k8s/daemonset.yaml");
    assert_eq!(kinds(&docs), ["Namespace", "DaemonSet"]);
    let ds = only(&docs, "DaemonSet");
    assert_eq!(text(ds, "apiVersion"), "apps/v1");
    check_gpu_workload(&docs, ds);
    let selector = string_map(ds, "spec.selector.matchLabels");
    let labels = string_map(ds, "spec.template.metadata.labels");
    assert!(!selector.is_empty());
    for (k, v) in &selector {
        assert_eq!(
            labels.get(k),
            Some(v),
            "the selector matches the pods' label {k}"
        );
    }
    // hostPath volumes need a namespace that allows them.
    assert_eq!(
        string_map(only(&docs, "Namespace"), "metadata.labels")
            .get("pod-security.kubernetes.io/enforce")
            .map(String::as_str),
        Some("privileged")
    );

    let (c, env) = container(ds);
    let script = script(c);
    let lines = gpu_doctor_lines(script);
    assert_eq!(lines.len(), 1, "one gpu-doctor command: {script}");
    let words = words(lines[0], &env);
    assert_eq!(
        words[1..4],
        ["--host-root", "/host", "doctor"],
        "the node at /host; RUN defaults to doctor"
    );
    let format = words
        .iter()
        .position(|w| w == "--format")
        .expect("--format");
    assert_eq!(words[format + 1], "prometheus");
    let out = output_of(&words).expect("-o");
    assert!(
        out.ends_with(".prom"),
        "node_exporter reads only *.prom: {out}"
    );
    assert!(
        script.contains("sleep \"$INTERVAL_SECONDS\""),
        "runs in a loop"
    );
    assert!(
        env["INTERVAL_SECONDS"]
            .parse::<u32>()
            .is_ok_and(|s| s >= 60)
    );
    // The signal handler removes the same file.
    assert!(script.contains(&format!("rm -f {out}")), "{script}");

    // -o writes into the hostPath folder node_exporter reads.
    let out_dir = Path::new(out)
        .parent()
        .expect("a folder")
        .to_str()
        .expect("UTF-8");
    let mounts = volume_mounts(ds);
    let volume = mounts
        .get(out_dir)
        .unwrap_or_else(|| panic!("-o {out} is not in a mounted folder: {mounts:?}"));
    assert_eq!(
        text(volume, "hostPath.path"),
        "/var/lib/node_exporter/textfile_collector"
    );
    assert_eq!(text(volume, "hostPath.type"), "Directory");
    let mount = at(c, "volumeMounts")
        .as_sequence()
        .expect("mounts")
        .iter()
        .find(|m| text(m, "mountPath") == out_dir)
        .expect("the mount");
    assert_ne!(
        mount.get("readOnly").and_then(Value::as_bool),
        Some(true),
        "the textfile folder is written"
    );
}

#[test]
fn the_daemonset_command_writes_valid_metrics_for_doctor_and_smoke() {
    let docs = documents("manifests/k8s/daemonset.yaml");
    let ds = only(&docs, "DaemonSet");
    let (c, mut env) = container(ds);
    let line = gpu_doctor_lines(script(c))[0];
    for (run, code) in [("doctor", 0), ("smoke", 3)] {
        env.insert("RUN".into(), run.into());
        let dir = crate::support::tempdir();
        let mut args: Vec<String> = words(line, &env).split_off(1);
        let out = args
            .iter_mut()
            .skip_while(|w| *w != "-o")
            .nth(1)
            .expect("-o FILE");
        let file: PathBuf = dir
            .path()
            .join(Path::new(out.as_str()).file_name().expect("a file"));
        *out = file.to_str().expect("UTF-8").to_string();
        let o = run_on_node(args, dir.path());
        // smoke cannot run without a CUDA driver here (3), and still writes its metrics; on a
        // machine with a GPU it may pass (0).
        assert!(
            o.code == code || (run == "smoke" && o.code == 0),
            "{run}: {}: {}",
            o.code,
            o.stderr
        );
        let text = std::fs::read_to_string(&file).expect("the metrics file");
        let samples = crate::prometheus::validate(&text, run);
        assert!(samples.iter().any(|s| s.name == "gpu_doctor_healthy"));
        // The node's files: its toolkit, its users' environments.
        assert!(
            text.contains("/home/ubuntu/venv") && text.contains("/usr/local/cuda-12.1"),
            "{text}"
        );
    }
    // A finding (exit 1) is a written report, not a failure: the loop logs only other codes.
    let script = script(c);
    assert!(
        script.contains(r#"[ "$code" -le 1 ] ||"#),
        "exit 1 must not be logged as a failure: {script}"
    );
}

#[test]
fn the_fleet_job_puts_one_pod_on_each_gpu_node_and_prints_json() {
    let docs = documents("manifests/k8s/job.yaml");
    assert_eq!(kinds(&docs), ["Namespace", "Job"]);
    let job = only(&docs, "Job");
    assert_eq!(text(job, "apiVersion"), "batch/v1");
    check_gpu_workload(&docs, job);
    assert_eq!(text(job, "spec.completionMode"), "Indexed");
    assert_eq!(
        number(job, "spec.completions"),
        number(job, "spec.parallelism"),
        "all pods at once, one per node"
    );
    assert!(number(job, "spec.backoffLimit") >= 1.0);
    assert!(number(job, "spec.ttlSecondsAfterFinished") > 0.0);
    assert!(number(job, "spec.activeDeadlineSeconds") > 0.0);
    let pod = at(job, "spec.template.spec");
    assert_eq!(text(pod, "restartPolicy"), "Never");
    assert_eq!(
        at(pod, "securityContext.runAsNonRoot").as_bool(),
        Some(true)
    );
    assert_ne!(number(pod, "securityContext.runAsUser"), 0.0);

    // Required anti-affinity on the node, against this Job's own pods.
    let labels = string_map(job, "spec.template.metadata.labels");
    let terms = at(
        pod,
        "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
    )
    .as_sequence()
    .expect("terms");
    assert!(
        terms.iter().any(|t| {
            text(t, "topologyKey") == "kubernetes.io/hostname"
                && string_map(t, "labelSelector.matchLabels")
                    .iter()
                    .all(|(k, v)| labels.get(k) == Some(v))
        }),
        "{terms:?}"
    );

    // The collection commands at the top select the Job's pods by a label they carry.
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/k8s/job.yaml"),
    )
    .expect("job.yaml");
    let header: String = source
        .lines()
        .take_while(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    let component = &labels["app.kubernetes.io/component"];
    assert!(
        header.contains(&format!("-l app.kubernetes.io/component={component}")),
        "{header}"
    );
    assert!(header.contains(&format!("job/{}", text(job, "metadata.name"))));
    assert!(header.contains("gpu-doctor report merge"));
    let ns = text(job, "metadata.namespace");
    assert!(header.contains(&format!("kubectl -n {ns} logs")));

    // The command prints the JSON report: run it on a fixture.
    let (c, env) = container(job);
    let lines = gpu_doctor_lines(script(c));

    assert_eq!(lines.len(), 1);
    let mut args = words(lines[0], &env).split_off(1);
    assert!(args.contains(&"--json".to_string()));
    let dir = crate::support::tempdir();
    let out = args
        .iter_mut()
        .skip_while(|w| *w != "-o")
        .nth(1)
        .expect("-o FILE");
    assert!(out.starts_with("/tmp/"), "written into the emptyDir: {out}");
    let file = dir.path().join("report.json");
    *out = file.to_str().expect("UTF-8").to_string();
    let o = run_on_node(args, dir.path());
    assert_eq!(o.code, 0, "{}", o.stderr);
    let report: gpu_doctor::report::Report =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("report")).expect("a report");
    assert_eq!(report.tool.name, "gpu-doctor");
    // The node's environments, named through the host root; the host name is the node's.
    assert!(report.tool.host_root.is_some());
    let envs: Vec<&str> = report.python_envs.iter().map(|e| e.path.as_str()).collect();
    assert!(
        envs.contains(&"/home/ubuntu/venv") && envs.contains(&"/home/alice/miniconda3/envs/ml"),
        "{envs:?}"
    );
    // The script decides by the file, not the exit code (1 = a report with a problem).
    let script = script(c);
    assert!(script.contains("[ ! -s /tmp/report.json ]"), "{script}");
}

#[test]
fn shell_words_split_like_sh() {
    let env: BTreeMap<String, String> = [("RUN".to_string(), "smoke".to_string())].into();
    assert_eq!(
        words(
            r#"gpu-doctor "$RUN" -r 'driver>=550' --x $RUN 2>/dev/null"#,
            &env
        ),
        ["gpu-doctor", "smoke", "-r", "driver>=550", "--x", "smoke"]
    );
    assert_eq!(words("a b > /dev/null || true", &env), ["a", "b"]);
    assert_eq!(words("a b>f", &env), ["a", "b"]);
}

/// Both files say, in their comments, how to hold a GPU instead (the alternative kept for
/// clusters that refuse NVIDIA_VISIBLE_DEVICES from unprivileged pods), and why it is not the
/// default; and how to read every user's environments (the one read-only capability).
#[test]
fn the_gpu_request_alternative_and_the_permissions_are_documented() {
    for file in ["manifests/k8s/daemonset.yaml", "manifests/k8s/job.yaml"] {
        let source = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
            .expect("the manifest");
        let comments: String = source
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n");
        for needle in [
            "nvidia.com/gpu: 1",
            "GPU-request alternative",
            "accept-nvidia-visible-devices-envvar-when-unprivileged",
            "DAC_READ_SEARCH",
            "0700/0750",
            "--host-root",
        ] {
            assert!(
                comments.contains(needle),
                "{file} does not document {needle:?}"
            );
        }
    }
}
