//! `gpu-doctor manifest update|show|verify` against a real HTTP server on 127.0.0.1 that the
//! tests start (a small `TcpListener` serving canned replies per path, which can delay, cut,
//! inflate or fail them). Each run has its own HOME, so the installed set is the test's own;
//! nothing here touches the internet.
//!
//! Every refused update must end with its own message and leave the previously installed set
//! in place and verifiable.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gpu_doctor::manifest::FILE_NAMES;
use gpu_doctor::tui::services::{AppServices, PlanChoice, Services};
use gpu_doctor::update::index::{self, Index};
use gpu_doctor::update::keys::{self, SecretKey};
use gpu_doctor::update::publish::{THROWAWAY_PUBLIC_KEY, publish};
use gpu_doctor::update::set::{self, SetFile, SetIdentity};
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// A tiny HTTP/1.1 server

/// What the server answers for one path.
#[derive(Clone)]
struct Reply {
    status: u16,
    body: Vec<u8>,
    /// Wait this long before answering.
    delay: Duration,
    /// Send only this many body bytes (after a `Content-Length` for all of them), then close.
    cut_at: Option<usize>,
    /// Leave out `Content-Length`: the body ends when the connection closes.
    no_length: bool,
    /// `Location` header; `{server}` stands for the server's own base URL.
    location: Option<String>,
}

impl Reply {
    fn ok(body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status: 200,
            body: body.into(),
            delay: Duration::ZERO,
            cut_at: None,
            no_length: false,
            location: None,
        }
    }

    fn status(status: u16) -> Reply {
        Reply {
            status,
            ..Reply::ok(format!("status {status}"))
        }
    }

    fn redirect(to: String) -> Reply {
        Reply {
            location: Some(to),
            ..Reply::status(302)
        }
    }
}

struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves `routes` (path → reply); other paths get 404.
    fn start(routes: HashMap<String, Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let stop = Arc::new(AtomicBool::new(false));
        let routes = Arc::new(routes);
        let flag = Arc::clone(&stop);
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let routes = Arc::clone(&routes);
                std::thread::spawn(move || serve(stream, &routes, addr));
            }
        });
        Server {
            addr,
            stop,
            accept: Some(accept),
        }
    }

    /// Serves a folder's files under `/`.
    fn folder(dir: &Path) -> Server {
        Server::start(routes_of(dir))
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn serve(stream: TcpStream, routes: &HashMap<String, Reply>, addr: SocketAddr) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(&stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line == "\r\n" || line == "\n" => break,
            Ok(_) => {}
        }
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("/");
    let reply = routes
        .get(path)
        .cloned()
        .unwrap_or_else(|| Reply::status(404));
    std::thread::sleep(reply.delay);
    let mut head = format!("HTTP/1.1 {} Canned\r\nConnection: close\r\n", reply.status);
    if !reply.no_length {
        head.push_str(&format!("Content-Length: {}\r\n", reply.body.len()));
    }
    if let Some(location) = &reply.location {
        let location = location.replace("{server}", &format!("http://{addr}/"));
        head.push_str(&format!("Location: {location}\r\n"));
    }
    head.push_str("\r\n");
    let body = &reply.body[..reply.cut_at.unwrap_or(reply.body.len())];
    let mut stream = &stream;
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

fn routes_of(dir: &Path) -> HashMap<String, Reply> {
    std::fs::read_dir(dir)
        .expect("published folder")
        .filter_map(Result::ok)
        .map(|e| {
            (
                format!("/{}", e.file_name().to_string_lossy()),
                Reply::ok(std::fs::read(e.path()).expect("read")),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Published sets

/// The repository's manifest files with every `[meta] updated` set to `date`.
fn redated(dir: &Path, date: &str) -> PathBuf {
    redated_with(dir, date, &|_, text| text.to_string())
}

/// [`redated`], each file's text first passed through `edit(name, text)`.
fn redated_with(dir: &Path, date: &str, edit: &dyn Fn(&str, &str) -> String) -> PathBuf {
    let src = dir.join(format!("src-{date}"));
    std::fs::create_dir_all(&src).expect("mkdir");
    for name in FILE_NAMES {
        let text = edit(name, set::embedded_text(name).expect("built-in text"));
        let text: Vec<String> = text
            .lines()
            .map(|l| {
                if l.starts_with("updated = \"") {
                    format!("updated = \"{date}\"")
                } else {
                    l.to_string()
                }
            })
            .collect();
        std::fs::write(src.join(name), text.join("\n") + "\n").expect("write");
    }
    src
}

/// The built-in set's date plus `days`.
fn built_in_plus(days: usize) -> String {
    let mut date = set::embedded_identity().date;
    for _ in 0..days {
        date = date.next_day();
    }
    date.to_string()
}

/// A set dated `date`, published with a throw-away key into `dir/<name>`; returns the folder
/// (with `manifest-signing.pub`) and the set's version.
fn published(dir: &Path, name: &str, date: &str) -> (PathBuf, String) {
    let out = dir.join(name);
    let done = publish(&redated(dir, date), &out, None).expect("published");
    (out, done.identity.version)
}

fn pubkey(folder: &Path) -> String {
    folder.join(THROWAWAY_PUBLIC_KEY).display().to_string()
}

/// Signs `index` with a fresh key and leaves the files a server needs in `out`.
fn sign_into(out: &Path, index_bytes: &[u8], seed: u8) -> String {
    let key = SecretKey::from_seed(&[seed; 32]);
    std::fs::create_dir_all(out).expect("mkdir");
    std::fs::write(out.join("index.json"), index_bytes).expect("write");
    std::fs::write(out.join("index.json.sig"), index::sign(index_bytes, &key)).expect("write");
    let path = out.join(THROWAWAY_PUBLIC_KEY);
    keys::write_public_key(&path, &key.public()).expect("pub");
    path.display().to_string()
}

// ---------------------------------------------------------------------------------------------
// Running gpu-doctor in a sandboxed HOME

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        Sandbox {
            dir: crate::support::tempdir(),
        }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn set_dir(&self) -> PathBuf {
        self.home().join(".local/share/gpu-doctor/manifests")
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
            .env_clear()
            .env("HOME", self.home())
            .env("PATH", "/usr/bin:/bin")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("gpu-doctor runs")
    }

    /// `manifest update` from `url`, trusting `key`, with short deadlines.
    fn update(&self, url: &str, key: &str) -> Output {
        self.run(&[
            "manifest",
            "update",
            "--url",
            url,
            "--pubkey",
            key,
            "--max-time",
            "10",
        ])
    }

    /// Installs a good set (built-in date + 1) from a local folder and returns its version and
    /// public key file.
    fn with_installed_set(&self) -> (String, String) {
        let (folder, version) = published(self.path(), "installed", &built_in_plus(1));
        let key = pubkey(&folder);
        let out = self.run(&[
            "manifest",
            "update",
            "--offline",
            "--url",
            &folder.display().to_string(),
            "--pubkey",
            &key,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        (version, key)
    }

    fn show(&self) -> Value {
        let out = self.run(&["manifest", "show", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        serde_json::from_slice(&out.stdout).expect("show --json")
    }

    /// The set installed first is still there, in use, and verifies.
    #[track_caller]
    fn assert_intact(&self, version: &str, key: &str) {
        let show = self.show();
        assert_eq!(show["in_use"]["origin"], "installed", "{show}");
        assert_eq!(show["in_use"]["version"], version, "{show}");
        let out = self.run(&["manifest", "verify", "--pubkey", key]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let leftovers: Vec<String> = std::fs::read_dir(self.set_dir().parent().expect("parent"))
            .expect("data dir")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "manifests")
            .collect();
        assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
    }
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Asserts a refused update: exit 1, `message` on stderr, the set in use unchanged.
#[track_caller]
fn assert_refused(out: &Output, message: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(out));
    assert!(
        stderr.contains(message),
        "want {message:?} in:\n{}",
        text(out)
    );
    assert!(
        stderr.contains("nothing was changed; the set in use is still the installed set"),
        "{}",
        text(out)
    );
}

// ---------------------------------------------------------------------------------------------
// Tests

#[test]
fn a_good_update_installs_and_doctor_uses_it() {
    let sandbox = Sandbox::new();
    let (folder, version) = published(sandbox.path(), "good", &built_in_plus(3));
    let server = Server::folder(&folder);
    let out = sandbox.update(&server.url(), &pubkey(&folder));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(&format!("Installed manifest set {version} (dated ")),
        "{stdout}"
    );
    assert!(
        out.stderr.is_empty(),
        "no progress when stderr is not a terminal"
    );
    sandbox.assert_intact(&version, &pubkey(&folder));

    let show = sandbox.show();
    assert_eq!(show["downloaded_from"]["source"], server.url());
    assert_eq!(
        show["files"].as_array().map(Vec::len),
        Some(FILE_NAMES.len())
    );
    assert!(
        show["files"][0]["rows"].as_u64().unwrap_or(0) > 10,
        "{show}"
    );

    // The same set again: nothing to do.
    let again = sandbox.update(&server.url(), &pubkey(&folder));
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(String::from_utf8_lossy(&again.stdout).starts_with("Already up to date"));

    // doctor says which set it used, in the text and in the report.
    let doctor = sandbox.run(&["doctor", "--json"]);
    assert_eq!(doctor.status.code(), Some(0), "{}", text(&doctor));
    let report: Value = serde_json::from_slice(&doctor.stdout).expect("report");
    assert_eq!(report["manifests"]["origin"], "installed");
    assert_eq!(report["manifests"]["version"], version);
    assert!(
        report["manifests"]["today"].is_string(),
        "{}",
        report["manifests"]
    );
    let doctor = sandbox.run(&["doctor"]);
    assert!(
        String::from_utf8_lossy(&doctor.stdout)
            .contains(&format!("manifests: installed set {version}")),
        "{}",
        text(&doctor)
    );
}

#[test]
fn an_unsigned_index_is_refused() {
    let sandbox = Sandbox::new();
    let (installed, key) = sandbox.with_installed_set();
    let (folder, _) = published(sandbox.path(), "unsigned", &built_in_plus(2));
    std::fs::remove_file(folder.join("index.json.sig")).expect("rm sig");
    let server = Server::folder(&folder);
    let out = sandbox.update(&server.url(), &pubkey(&folder));
    assert_refused(
        &out,
        &format!(
            "is not signed ({}index.json.sig is missing); gpu-doctor only installs signed manifest sets",
            server.url()
        ),
    );
    sandbox.assert_intact(&installed, &key);

    // The same with --json: the outcome on stdout, nothing on stderr.
    let out = sandbox.run(&[
        "manifest",
        "update",
        "--json",
        "--url",
        &server.url(),
        "--pubkey",
        &pubkey(&folder),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stderr.is_empty(), "{}", text(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["status"], "failed");
    assert_eq!(json["error"]["kind"], "unsigned");
    assert_eq!(json["in_use"]["version"], installed);
}

#[test]
fn an_index_signed_by_another_key_is_refused() {
    let sandbox = Sandbox::new();
    let (installed, key) = sandbox.with_installed_set();
    let (folder, _) = published(sandbox.path(), "signed", &built_in_plus(2));
    // The trusted key is the installed set's, not the one this set was signed with.
    let server = Server::folder(&folder);
    let out = sandbox.update(&server.url(), &key);
    let signer = keys::read_public_key(Path::new(&pubkey(&folder))).expect("signer");
    assert_refused(
        &out,
        &format!(
            "the index is signed by key {}, not by a trusted key",
            signer.id()
        ),
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("pass --pubkey"));
    sandbox.assert_intact(&installed, &key);

    // Without a key nothing is trusted (there is no built-in key): a usage error, set intact.
    let out = sandbox.run(&["manifest", "update", "--url", &server.url()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no built-in key"));
    sandbox.assert_intact(&installed, &key);

    // A rotation's hand-over: the old key and the new one both trusted, the set signed by the
    // new one installs.
    let out = sandbox.run(&[
        "manifest",
        "update",
        "--url",
        &server.url(),
        "--pubkey",
        &key,
        "--pubkey",
        &pubkey(&folder),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn a_changed_index_fails_its_signature() {
    let sandbox = Sandbox::new();
    let (installed, key) = sandbox.with_installed_set();
    let (folder, _) = published(sandbox.path(), "tampered", &built_in_plus(2));
    let index = std::fs::read_to_string(folder.join("index.json")).expect("index");
    std::fs::write(folder.join("index.json"), index.replace("  ", "   ")).expect("write");
    let server = Server::folder(&folder);
    let out = sandbox.update(&server.url(), &pubkey(&folder));
    assert_refused(&out, "index.json does not verify with key");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the index was changed after it was signed")
    );
    sandbox.assert_intact(&installed, &key);
}

#[test]
fn a_file_whose_sha256_does_not_match_is_refused() {
    let sandbox = Sandbox::new();
    let (installed, key) = sandbox.with_installed_set();
    let (folder, _) = published(sandbox.path(), "sha", &built_in_plus(2));
    let mut bytes = std::fs::read(folder.join("gpus.toml")).expect("gpus.toml");
    let at = bytes.len() - 2;
    bytes[at] = if bytes[at] == b'x' { b'y' } else { b'x' };
    std::fs::write(folder.join("gpus.toml"), bytes).expect("write");
    let server = Server::folder(&folder);
    let out = sandbox.update(&server.url(), &pubkey(&folder));
    assert_refused(&out, &format!("{}gpus.toml: sha256 ", server.url()));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not match the signed index"));
    sandbox.assert_intact(&installed, &key);
}

#[test]
fn a_truncated_body_is_refused() {
    let sandbox = Sandbox::new();
    let (installed, key) = sandbox.with_installed_set();
    let (folder, _) = published(sandbox.path(), "cut", &built_in_plus(2));
    let mut routes = routes_of(&folder);
    let frameworks = routes.get_mut("/frameworks.toml").expect("route");
    frameworks.cut_at = Some(frameworks.body.len() / 2);
    let expected = frameworks.body.len();
    let server = Server::start(routes);
    let out = sandbox.update(&server.url(), &pubkey(&folder));
    assert_refused(
        &out,
        &format!(
            "{}frameworks.toml: the download stopped after {} of {expected} bytes (truncated)",
            server.url(),
            expected / 2
        ),
    );
    sandbox.assert_intact(&installed, &key);
}

#[test]
fn oversized_bodies_are_refused_with_or_without_a_length() {
    let sandbox = Sandbox::new();
    let (installed, key) = sandbox.with_installed_set();
    let (folder, _) = published(sandbox.path(), "big", &built_in_plus(2));

    // A file longer than the index says, announced by Content-Length.
    let mut routes = routes_of(&folder);
    let size = routes["/cuda.toml"].body.len();
    routes
        .get_mut("/cuda.toml")
        .expect("route")
        .body
        .extend(std::iter::repeat_n(b'#', 10_000));
    let server = Server::start(routes);
    let out = sandbox.update(&server.url(), &pubkey(&folder));
    assert_refused(
        &out,
        &format!(
            "{}cuda.toml is larger than the {size} bytes the signed index lists; refusing it",
            server.url()
        ),
    );
    sandbox.assert_intact(&installed, &key);

    // The same without Content-Length: the read stops at the limit.
    let mut routes = routes_of(&folder);
    let cuda = routes.get_mut("/cuda.toml").expect("route");
    cuda.body.extend(std::iter::repeat_n(b'#', 10_000));
    cuda.no_length = true;
    let server = Server::start(routes);
    let out = sandbox.update(&server.url(), &pubkey(&folder));
    assert_refused(&out, "cuda.toml is larger than the");
    sandbox.assert_intact(&installed, &key);

    // An index over its own limit (64 KiB), streamed.
    let mut routes = routes_of(&folder);
    let index = routes.get_mut("/index.json").expect("route");
    index.body = vec![b' '; 200_000];
    index.no_length = true;
    let server = Server::start(routes);
    let out = sandbox.update(&server.url(), &pubkey(&folder));
    assert_refused(
        &out,
        &format!(
            "{}index.json is larger than 65536 bytes, the most gpu-doctor accepts for it",
            server.url()
        ),
    );
    sandbox.assert_intact(&installed, &key);
}

#[test]
fn a_slow_server_times_out() {
    let sandbox = Sandbox::new();
    let (installed, key) = sandbox.with_installed_set();
    let (folder, _) = published(sandbox.path(), "slow", &built_in_plus(2));
    let mut routes = routes_of(&folder);
    routes.get_mut("/index.json").expect("route").delay = Duration::from_secs(20);
    let server = Server::start(routes);
    let started = Instant::now();
    let out = sandbox.run(&[
        "manifest",
        "update",
        "--url",
        &server.url(),
        "--pubkey",
        &pubkey(&folder),
        "--max-time",
        "1",
    ]);
    let elapsed = started.elapsed();
    assert_refused(
        &out,
        &format!(
            "timed out fetching {}index.json (the whole update may take 1 s, --max-time)",
            server.url()
        ),
    );
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    sandbox.assert_intact(&installed, &key);
}

#[test]
fn not_found_and_server_errors_are_refused() {
    let sandbox = Sandbox::new();
    let (installed, key) = sandbox.with_installed_set();

    let empty = Server::start(HashMap::new());
    let out = sandbox.update(&empty.url(), &key);
    assert_refused(
        &out,
        &format!(
            "there is no manifest index at {}index.json; check --url",
            empty.url()
        ),
    );

    let (folder, _) = published(sandbox.path(), "errors", &built_in_plus(2));
    let mut routes = routes_of(&folder);
    routes.insert("/index.json".into(), Reply::status(500));
    let failing = Server::start(routes);
    let out = sandbox.update(&failing.url(), &pubkey(&folder));
    assert_refused(
        &out,
        &format!("{}index.json: the server answered HTTP 500", failing.url()),
    );

    let mut routes = routes_of(&folder);
    routes.remove("/install.toml");
    let missing = Server::start(routes);
    let out = sandbox.update(&missing.url(), &pubkey(&folder));
    assert_refused(
        &out,
        &format!(
            "install.toml is listed in the signed index but missing from {}",
            missing.url()
        ),
    );
    sandbox.assert_intact(&installed, &key);
}

#[test]
fn an_index_older_than_the_built_in_set_is_refused() {
    let sandbox = Sandbox::new();
    let (installed, key) = sandbox.with_installed_set();
    let (folder, _) = published(sandbox.path(), "old", "2020-01-01");
    let server = Server::folder(&folder);
    let out = sandbox.update(&server.url(), &pubkey(&folder));
    assert_refused(
        &out,
        &format!(
            "refusing to roll back: the published set is dated 2020-01-01, older than the set \
             built into this gpu-doctor ({})",
            set::embedded_identity().date
        ),
    );
    sandbox.assert_intact(&installed, &key);
}

#[test]
fn malformed_json_and_toml_are_refused() {
    let sandbox = Sandbox::new();
    let (installed, key) = sandbox.with_installed_set();

    // A validly signed index that is not JSON.
    let out_dir = sandbox.path().join("bad-json");
    let key_file = sign_into(&out_dir, b"{\"format\": 1, \"version\": ", 41);
    let server = Server::folder(&out_dir);
    let out = sandbox.update(&server.url(), &key_file);
    assert_refused(
        &out,
        &format!(
            "{}index.json is not a valid manifest index: EOF while parsing",
            server.url()
        ),
    );

    // A signed index listing a cuda.toml that is not TOML (size and sha256 match).
    let (folder, _) = published(sandbox.path(), "bad-toml", &built_in_plus(2));
    let broken =
        b"[meta]\nschema = 1\ntitle = \"x\"\nupdated = \"2030-01-01\"\n[[release]\n".to_vec();
    std::fs::write(folder.join("cuda.toml"), &broken).expect("write");
    let date = gpu_doctor::update::date::Date::parse(&built_in_plus(2)).expect("date");
    let files: Vec<SetFile> = FILE_NAMES
        .iter()
        .map(|name| {
            let bytes = std::fs::read(folder.join(name)).expect("read");
            SetFile {
                name,
                size: bytes.len() as u64,
                sha256: set::sha256_hex(&bytes),
                updated: String::new(),
            }
        })
        .collect();
    let digests: Vec<(&str, &str)> = files.iter().map(|f| (f.name, f.sha256.as_str())).collect();
    let identity = SetIdentity {
        version: set::set_version(date, &digests),
        date,
        files,
    };
    let key_file = sign_into(&folder, &Index::describe(&identity).to_bytes(), 42);
    let server = Server::folder(&folder);
    let out = sandbox.update(&server.url(), &key_file);
    assert_refused(&out, "cuda.toml: TOML parse error at line 5");
    sandbox.assert_intact(&installed, &key);
}

#[test]
fn redirects_are_limited_and_may_not_leave_https_or_loopback() {
    let sandbox = Sandbox::new();
    let (installed, key) = sandbox.with_installed_set();
    let (folder, _) = published(sandbox.path(), "redirect", &built_in_plus(2));

    let mut routes = HashMap::new();
    routes.insert(
        "/loop/index.json".to_string(),
        Reply::redirect("{server}loop/index.json".to_string()),
    );
    routes.insert(
        "/away/index.json".to_string(),
        Reply::redirect("http://192.0.2.1/index.json".to_string()),
    );
    let server = Server::start(routes);
    let out = sandbox.update(&format!("{}loop/", server.url()), &pubkey(&folder));
    assert_refused(&out, "more than 5 redirects");
    let out = sandbox.update(&format!("{}away/", server.url()), &pubkey(&folder));
    assert_refused(
        &out,
        "redirect refused: http://192.0.2.1/index.json: plain http is refused",
    );
    sandbox.assert_intact(&installed, &key);
}

#[test]
fn a_damaged_installed_set_falls_back_to_the_built_in_one_with_a_warning() {
    let sandbox = Sandbox::new();
    let (_, key) = sandbox.with_installed_set();
    std::fs::write(sandbox.set_dir().join("errors.toml"), "# emptied\n").expect("damage");

    let show = sandbox.show();
    assert_eq!(show["in_use"]["origin"], "embedded", "{show}");
    assert_eq!(show["installed"]["status"], "damaged", "{show}");
    let warning = show["warning"].as_str().unwrap_or_default();
    assert!(warning.contains("is damaged"), "{warning}");
    assert!(warning.contains("errors.toml has 10 bytes"), "{warning}");

    let out = sandbox.run(&["manifest", "verify", "--pubkey", &key]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not verify"),
        "{}",
        text(&out)
    );

    let doctor = sandbox.run(&["doctor", "--json"]);
    assert_eq!(doctor.status.code(), Some(0), "{}", text(&doctor));
    assert!(
        String::from_utf8_lossy(&doctor.stderr)
            .contains("gpu-doctor: warning: the installed manifest set"),
        "{}",
        text(&doctor)
    );
    let report: Value = serde_json::from_slice(&doctor.stdout).expect("report");
    assert_eq!(report["manifests"]["origin"], "embedded");
    assert!(report["manifests"]["warning"].is_string());
}

#[test]
fn usage_errors_exit_2_without_touching_the_network() {
    let sandbox = Sandbox::new();
    // No key is built in: the first thing to say is how to trust one.
    let out = sandbox.run(&["manifest", "update"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for needle in [
        "gpu-doctor has no built-in key",
        "Pass --pubkey FILE",
        "manifest_pubkey",
        "scripts/publish-manifests.sh",
    ] {
        assert!(stderr.contains(needle), "{needle}: {}", text(&out));
    }
    let json = sandbox.run(&["manifest", "update", "--json"]);
    assert_eq!(json.status.code(), Some(2), "{}", text(&json));
    let value: Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(value["error"]["kind"], "no_trusted_key", "{value}");
    let verify = sandbox.run(&["manifest", "verify"]);
    assert_eq!(verify.status.code(), Some(2), "{}", text(&verify));
    assert!(String::from_utf8_lossy(&verify.stderr).contains("Pass --pubkey FILE"));

    // A throw-away key pair (its secret is deleted with the sandbox) to get past it.
    let secret = sandbox.path().join("throwaway.key");
    let made = sandbox.run(&["manifest", "keygen", secret.to_str().expect("UTF-8")]);
    assert_eq!(made.status.code(), Some(0), "{}", text(&made));
    let key = sandbox.path().join("throwaway.pub");
    let key = key.to_str().expect("UTF-8");
    let out = sandbox.run(&["manifest", "update", "--pubkey", key]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("gpu-doctor has no published manifest location yet"),
        "{}",
        text(&out)
    );

    let out = sandbox.run(&[
        "manifest",
        "update",
        "--pubkey",
        key,
        "--url",
        "http://192.0.2.1/m/",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("plain http is refused"));

    let out = sandbox.run(&[
        "manifest",
        "update",
        "--pubkey",
        key,
        "--offline",
        "--url",
        "https://mirror.example/m/",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--offline: https://mirror.example/m/ needs the network")
    );

    let out = sandbox.run(&[
        "manifest",
        "update",
        "--url",
        "https://mirror.example/m/",
        "--pubkey",
        "/nonexistent.pub",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read key file /nonexistent.pub"));
}

#[test]
fn the_config_file_names_the_location_and_the_key() {
    let sandbox = Sandbox::new();
    let (folder, version) = published(sandbox.path(), "configured", &built_in_plus(1));
    let server = Server::folder(&folder);
    let config_dir = sandbox.home().join(".config/gpu-doctor");
    std::fs::create_dir_all(&config_dir).expect("mkdir");
    std::fs::copy(
        folder.join(THROWAWAY_PUBLIC_KEY),
        config_dir.join("mirror.pub"),
    )
    .expect("copy");
    std::fs::write(
        config_dir.join("config.toml"),
        format!(
            "# a mirror\nmanifest_url = \"{}\"\nmanifest_pubkey = \"mirror.pub\"\nother_issue = true\n",
            server.url()
        ),
    )
    .expect("config");
    let out = sandbox.run(&["manifest", "update", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["status"], "installed");
    assert_eq!(json["version"], version);
    assert_eq!(json["source"], server.url());
    let verify = sandbox.run(&["manifest", "verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify));

    std::fs::write(config_dir.join("config.toml"), "manifest_url = 7\n").expect("config");
    let out = sandbox.run(&["manifest", "update"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`manifest_url` must be a string"));
}

#[test]
fn the_publish_script_writes_a_servable_set() {
    let sandbox = Sandbox::new();
    let out_dir = sandbox.path().join("out");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/publish-manifests.sh");
    let run = Command::new("bash")
        .arg(&script)
        .arg(&out_dir)
        .env("GPU_DOCTOR", env!("CARGO_BIN_EXE_gpu-doctor"))
        .output()
        .expect("bash runs");
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    for name in FILE_NAMES
        .iter()
        .chain(&["index.json", "index.json.sig", THROWAWAY_PUBLIC_KEY])
    {
        assert!(out_dir.join(name).is_file(), "{name}");
    }
    // The repository's set is the built-in one: served, it is already up to date.
    let server = Server::folder(&out_dir);
    let out = sandbox.update(&server.url(), &pubkey(&out_dir));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&format!(
            "Already up to date: the published set {} is the built-in set in use.",
            set::embedded_identity().version
        )),
        "{}",
        text(&out)
    );

    // --from a newer folder, installed offline from disk.
    let newer = redated(sandbox.path(), &built_in_plus(4));
    let out_dir = sandbox.path().join("out-newer");
    let run = Command::new("bash")
        .arg(&script)
        .arg(&out_dir)
        .arg("--from")
        .arg(&newer)
        .env("GPU_DOCTOR", env!("CARGO_BIN_EXE_gpu-doctor"))
        .output()
        .expect("bash runs");
    assert_eq!(run.status.code(), Some(0), "{}", text(&run));
    let out = sandbox.run(&[
        "manifest",
        "update",
        "--offline",
        "--url",
        &out_dir.display().to_string(),
        "--pubkey",
        &pubkey(&out_dir),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(sandbox.show()["in_use"]["date"], built_in_plus(4));
}

/// The publishing script says, in its `--help`, how to make the key offline, keep the secret off
/// build and test machines, and rotate with both public keys trusted for a while.
#[test]
fn the_publish_script_documents_the_key_and_its_rotation() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/publish-manifests.sh");
    let help = Command::new("bash")
        .arg(&script)
        .arg("--help")
        .output()
        .expect("bash runs");
    assert_eq!(help.status.code(), Some(2));
    let help = String::from_utf8_lossy(&help.stderr);
    for needle in [
        "offline machine",
        "manifest keygen",
        "never copied to a CI runner",
        "throw-away keys",
        "ROTATING",
        "one a line",
        "hand-over window",
        "If a secret leaks",
    ] {
        assert!(help.contains(needle), "--help lacks {needle:?}:\n{help}");
    }
    // The help is the whole header, up to the first command.
    assert!(!help.contains("set -euo pipefail"), "{help}");
}

// ---------------------------------------------------------------------------------------------
// One set per run

/// What the installed set of [`every_face_uses_the_installed_set`] changes, one mark per table
/// a face reads: the torch index (plans), a GPU id row's first driver (the report's GPUs), an
/// error's meaning (explain), a GPU model's name (estimate).
const MIRROR: &str = "https://mirror.example/whl/";
const FIRST_DRIVER: &str = "570.99.99";
const MEANING: &str = "(installed set) The driver is older";
const MODEL: &str = "GeForce RTX 3070 (installed set)";

fn marked(name: &str, text: &str) -> String {
    match name {
        "frameworks.toml" => text.replace("https://download.pytorch.org/whl/", MIRROR),
        "gpu-ids.toml" => text.replace(
            r#"["0x2b85", "", "GB202", "570.86.16","#,
            &format!(r#"["0x2b85", "", "GB202", "{FIRST_DRIVER}","#),
        ),
        "errors.toml" => text.replace(
            "meaning = \"The driver is older",
            &format!("meaning = \"{MEANING}"),
        ),
        "gpus.toml" => text.replace(
            "name = \"GeForce RTX 3070\"",
            &format!("name = \"{MODEL}\""),
        ),
        _ => text.to_string(),
    }
}

/// The issue-39 bug: `doctor` diagnosed with an installed set while `plan`, `smoke`,
/// `estimate`, the TUI's plan and explain box used the built-in one. With a set installed by
/// `manifest update` that differs from the built-in one in each table they read, every face
/// shows the installed set's rows.
#[test]
fn every_face_uses_the_installed_set() {
    const MACHINE: &str = "rtx5090-torch-cu126";
    let work = crate::support::tempdir();
    let root = work.path().join("root");
    crate::support::copy_tree(&crate::support::fixture_dir(MACHINE).join("root"), &root);
    let date = built_in_plus(2);
    let src = redated_with(work.path(), &date, &marked);
    for (name, mark) in [
        ("frameworks.toml", MIRROR),
        ("gpu-ids.toml", FIRST_DRIVER),
        ("errors.toml", MEANING),
        ("gpus.toml", MODEL),
    ] {
        let built_in = set::embedded_text(name).expect("built-in");
        let text = std::fs::read_to_string(src.join(name)).expect("edited");
        assert!(
            !built_in.contains(mark) && text.contains(mark),
            "{name}: {mark}"
        );
    }
    let published = work.path().join("published");
    let version = publish(&src, &published, None)
        .expect("published")
        .identity
        .version;
    let env = crate::support::fixture_env(MACHINE);
    let run = |args: &[&str], stdin: Option<&str>| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .arg("--root")
            .arg(&root)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("gpu-doctor runs");
        if let Some(text) = stdin {
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(text.as_bytes())
                .expect("write");
        }
        drop(child.stdin.take());
        let out = child.wait_with_output().expect("gpu-doctor ends");
        (
            text(&out),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (said, _) = run(
        &[
            "manifest",
            "update",
            "--offline",
            "--url",
            &published.display().to_string(),
            "--pubkey",
            &pubkey(&published),
        ],
        None,
    );
    assert!(said.starts_with("exit Some(0)"), "{said}");

    // doctor: the report's set and a GPU filled from its id table.
    let (said, stdout) = run(&["doctor", "--json"], None);
    let report: Value = serde_json::from_str(&stdout).expect(&said);
    assert_eq!(report["manifests"]["version"], version.as_str(), "{said}");
    assert_eq!(report["gpus"][0]["first_driver"], FIRST_DRIVER, "{said}");
    // smoke (which cannot run under --root, and says so) reports the same machine.
    let (said, stdout) = run(&["smoke", "--json"], None);
    let report: Value = serde_json::from_str(&stdout).expect(&said);
    assert_eq!(report["manifests"]["version"], version.as_str(), "{said}");
    assert_eq!(report["gpus"][0]["first_driver"], FIRST_DRIVER, "{said}");
    // plan: the torch index of the installed set.
    let (said, stdout) = run(&["plan", "--framework", "torch"], None);
    assert!(stdout.contains(MIRROR), "{said}");
    assert!(!stdout.contains("download.pytorch.org/whl"), "{said}");
    // explain: the installed set's error table.
    let error = "RuntimeError: The NVIDIA driver on your system is too old (found version 11000).";
    let (said, stdout) = run(&["explain"], Some(error));
    assert!(stdout.contains(MEANING), "{said}");
    // estimate: the installed set's GPU models.
    let (said, stdout) = run(&["estimate", "--params", "1", "--infer"], None);
    assert!(stdout.contains(MODEL), "{said}");

    // The TUI's services, given the set the settings pass would choose for this root.
    let host = gpu_doctor::host::Host::rooted(
        root.clone(),
        gpu_doctor::host::Env::from_pairs(env.clone()),
        Duration::from_secs(10),
    );
    let set = Arc::new(gpu_doctor::update::set_in_use(host.clone()));
    let services = AppServices::new(host, Arc::clone(&set));
    let report = services.examine().expect("examined");
    assert_eq!(report.manifests.version, version);
    assert_eq!(report.gpus[0].first_driver.as_deref(), Some(FIRST_DRIVER));
    let answer = serde_json::to_string(&services.explain(&report, error)).expect("json");
    assert!(answer.contains(MEANING), "{answer}");
    let choice = PlanChoice {
        framework: Some("torch".to_string()),
        ..PlanChoice::default()
    };
    let plan = services.plan(&report, &choice).expect("a plan");
    assert!(plan.script.contains(MIRROR), "{}", plan.script);
    assert_eq!(set.get().version, version);
}
