//! The update flow end to end, in process: sets published into memory or a temporary folder,
//! read back through the same checks `manifest update` and `doctor` use.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::UpdateError;
use super::fetch::{FetchError, HttpOptions, Location, Source};
use super::index::{self, INDEX_FILE, Index, SIGNATURE_FILE};
use super::install::{Plan, Updated, location, trusted_keys, update};
use super::keys::SecretKey;
use super::read::{check_file_dates, check_set_date, read_files, read_signed_index};
use super::render::Progress;
use super::set::{self, CheckedSet, SetIdentity};
use super::store::Store;
use super::*;
use crate::config::{Config, Dirs};
use crate::date::Date;
use crate::host::{Env, Host};
use crate::manifest::FILE_NAMES;

/// A set held in memory, by file name.
#[derive(Default, Clone)]
struct MemSource {
    files: BTreeMap<String, Vec<u8>>,
}

impl Source for MemSource {
    fn locate(&self, name: &str) -> String {
        format!("mem://{name}")
    }

    fn get(&mut self, name: &str, limit: u64) -> Result<Option<Vec<u8>>, FetchError> {
        match self.files.get(name) {
            Some(bytes) if bytes.len() as u64 > limit => Err(FetchError::TooLarge {
                url: self.locate(name),
                limit,
            }),
            other => Ok(other.cloned()),
        }
    }
}

fn key(n: u8) -> SecretKey {
    SecretKey::from_seed(&[n; 32])
}

/// The built-in files with every `[meta] updated` set to `date`.
fn files_dated(date: &str) -> Vec<(&'static str, Vec<u8>)> {
    FILE_NAMES
        .iter()
        .map(|name| {
            (
                *name,
                redate(set::embedded_text(name).unwrap_or_default(), date),
            )
        })
        .collect()
}

fn redate(text: &str, date: &str) -> Vec<u8> {
    text.lines()
        .map(|line| {
            if line.starts_with("updated = \"") {
                format!("updated = \"{date}\"")
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        .into_bytes()
}

/// A source serving `files` with an index signed by `signer`.
fn published(files: &[(&'static str, Vec<u8>)], signer: &SecretKey) -> MemSource {
    let pairs: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (*n, b.as_slice())).collect();
    let checked = set::check_set(&pairs).expect("a good set");
    let index = Index::describe(&checked.identity).to_bytes();
    let mut source = MemSource::default();
    for (name, bytes) in files {
        source.files.insert((*name).to_string(), bytes.clone());
    }
    source
        .files
        .insert(SIGNATURE_FILE.into(), index::sign(&index, signer));
    source.files.insert(INDEX_FILE.into(), index);
    source
}

fn days_after_built_in(days: i64) -> String {
    let mut date = set::embedded_identity().date;
    for _ in 0..days {
        date = date.next_day();
    }
    date.to_string()
}

fn read(source: &mut MemSource, trusted: &SecretKey) -> Result<CheckedSet, UpdateError> {
    let (index, _, _) = read_signed_index(source, &[trusted.public()], &Progress::off())?;
    read_files(source, &index, &Progress::off()).map(|(_, checked)| checked)
}

fn built_in_selected() -> Selected {
    Selected {
        manifests: Cow::Borrowed(crate::manifest::embedded()),
        origin: Origin::Embedded,
        identity: set::embedded_identity().clone(),
        installed_dir: None,
        installed: InstalledState::None,
    }
}

#[test]
fn a_newer_signed_set_reads_back_with_its_identity() {
    let date = days_after_built_in(1);
    let mut source = published(&files_dated(&date), &key(1));
    let checked = read(&mut source, &key(1)).expect("reads");
    assert_eq!(checked.identity.date.to_string(), date);
    assert!(check_set_date(checked.identity.date, &built_in_selected()).is_ok());
    assert!(check_file_dates(&checked.identity).is_ok());
}

#[test]
fn an_unsigned_index_is_refused() {
    let mut source = published(&files_dated(&days_after_built_in(1)), &key(1));
    source.files.remove(SIGNATURE_FILE);
    let error = read(&mut source, &key(1)).expect_err("unsigned");
    assert_eq!(error.kind(), "unsigned");
    assert_eq!(
        error.to_string(),
        "the index at mem://index.json is not signed (mem://index.json.sig is missing); \
         gpu-doctor only installs signed manifest sets"
    );
}

#[test]
fn no_index_is_its_own_message() {
    let mut source = MemSource::default();
    let error = read(&mut source, &key(1)).expect_err("no index");
    assert_eq!(error.kind(), "no_index");
}

#[test]
fn file_problems_name_the_file_and_what_is_wrong() {
    let good = published(&files_dated(&days_after_built_in(1)), &key(1));

    let mut changed = good.clone();
    let bytes = changed.files.get_mut("gpus.toml").expect("gpus.toml");
    let at = bytes.len() - 2;
    bytes[at] ^= 0x20;
    let error = read(&mut changed, &key(1)).expect_err("sha256");
    assert_eq!(error.kind(), "checksum");
    assert!(
        error.to_string().starts_with("mem://gpus.toml: sha256 "),
        "{error}"
    );

    let mut longer = good.clone();
    longer
        .files
        .get_mut("cudnn.toml")
        .expect("cudnn.toml")
        .push(b'\n');
    let error = read(&mut longer, &key(1)).expect_err("oversized");
    assert_eq!(error.kind(), "too_large");
    assert!(error.to_string().contains("larger than the"), "{error}");

    let mut shorter = good.clone();
    shorter
        .files
        .get_mut("errors.toml")
        .expect("errors.toml")
        .pop();
    let error = read(&mut shorter, &key(1)).expect_err("short");
    assert_eq!(error.kind(), "size_mismatch");

    let mut missing = good;
    missing.files.remove("install.toml");
    let error = read(&mut missing, &key(1)).expect_err("missing");
    assert_eq!(error.kind(), "missing_file");
}

#[test]
fn a_signed_set_that_does_not_parse_or_validate_is_refused() {
    let mut files = files_dated(&days_after_built_in(1));
    // Sign a set with a TOML error: the publisher's checks are bypassed on purpose.
    files[0].1 =
        b"[meta]\nschema = 1\ntitle = \"x\"\nupdated = \"2030-01-01\"\n[[release]\n".to_vec();
    let mut source = MemSource::default();
    let identity_files: Vec<set::SetFile> = files
        .iter()
        .map(|(name, bytes)| set::SetFile {
            name,
            size: bytes.len() as u64,
            sha256: set::sha256_hex(bytes),
            updated: String::new(),
        })
        .collect();
    let date = Date::parse(&days_after_built_in(1)).expect("date");
    let digests: Vec<(&str, &str)> = identity_files
        .iter()
        .map(|f| (f.name, f.sha256.as_str()))
        .collect();
    let identity = SetIdentity {
        version: set::set_version(date, &digests),
        date,
        files: identity_files,
    };
    let index = Index::describe(&identity).to_bytes();
    for (name, bytes) in &files {
        source.files.insert((*name).to_string(), bytes.clone());
    }
    source
        .files
        .insert(SIGNATURE_FILE.into(), index::sign(&index, &key(1)));
    source.files.insert(INDEX_FILE.into(), index);
    let error = read(&mut source, &key(1)).expect_err("bad toml");
    assert_eq!(error.kind(), "malformed_manifest");
    assert!(error.to_string().starts_with("cuda.toml: "), "{error}");
}

#[test]
fn rollbacks_are_refused_for_the_set_and_for_each_file() {
    let built_in = set::embedded_identity();
    let older = Date::parse("2020-01-01").expect("date");
    let error = check_set_date(older, &built_in_selected()).expect_err("older");
    assert_eq!(
        error.to_string(),
        format!(
            "refusing to roll back: the published set is dated 2020-01-01, older than the set \
             built into this gpu-doctor ({})",
            built_in.date
        )
    );

    // A newer set with one file older than the built-in copy.
    let mut files = files_dated(&days_after_built_in(2));
    files[1].1 = redate(
        set::embedded_text("gpus.toml").unwrap_or_default(),
        "2020-01-01",
    );
    let pairs: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (*n, b.as_slice())).collect();
    let checked = set::check_set(&pairs).expect("a good set");
    let error = check_file_dates(&checked.identity).expect_err("older file");
    assert!(
        error.to_string().starts_with(
            "refusing to roll back: gpus.toml in the published set is dated 2020-01-01"
        ),
        "{error}"
    );

    // Older than an installed set in use, though newer than the built-in one.
    let mut installed = built_in_selected();
    installed.origin = Origin::Installed;
    installed.identity.date = Date::parse(&days_after_built_in(5)).expect("date");
    let date = Date::parse(&days_after_built_in(3)).expect("date");
    let error = check_set_date(date, &installed).expect_err("older than installed");
    assert!(
        error.to_string().contains("older than the installed set"),
        "{error}"
    );
}

#[test]
fn an_index_whose_date_disagrees_with_its_files_is_refused() {
    let files = files_dated(&days_after_built_in(1));
    let pairs: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (*n, b.as_slice())).collect();
    let mut identity = set::check_set(&pairs).expect("good").identity;
    identity.date = identity.date.next_day();
    let digests: Vec<(&str, &str)> = identity
        .files
        .iter()
        .map(|f| (f.name, f.sha256.as_str()))
        .collect();
    identity.version = set::set_version(identity.date, &digests);
    let index = Index::describe(&identity).to_bytes();
    let mut source = published(&files, &key(1));
    source
        .files
        .insert(SIGNATURE_FILE.into(), index::sign(&index, &key(1)));
    source.files.insert(INDEX_FILE.into(), index);
    let error = read(&mut source, &key(1)).expect_err("date mismatch");
    assert_eq!(error.kind(), "date_mismatch");
}

/// A host whose data folder is inside `home`.
fn host_with_home(home: &Path) -> Host {
    Host::real(
        Env::from_pairs([("HOME", home.display().to_string())]),
        Duration::from_secs(1),
    )
}

/// Publishes `files` into a folder and returns an update plan reading it.
fn local_plan(
    dir: &Path,
    home: &Path,
    files: &[(&'static str, Vec<u8>)],
    signer: &SecretKey,
) -> Plan {
    let out = dir.join("published");
    std::fs::create_dir_all(&out).expect("mkdir");
    for (name, bytes) in &published(files, signer).files {
        std::fs::write(out.join(name), bytes).expect("write");
    }
    Plan {
        location: Location::Dir(out),
        trusted: vec![signer.public()],
        store: Store::new(home.join(".local/share/gpu-doctor")),
        options: HttpOptions {
            connect_timeout: Duration::from_secs(1),
            max_time: Duration::from_secs(1),
            proxy_from_env: false,
        },
    }
}

#[test]
fn install_then_select_then_damage_falls_back_with_a_warning() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let host = host_with_home(&home);
    assert_eq!(select(&host).origin, Origin::Embedded);

    let date = days_after_built_in(1);
    let plan = local_plan(tmp.path(), &home, &files_dated(&date), &key(3));
    let (updated, identity) = update(&plan, &select(&host), &Progress::off()).expect("installs");
    assert!(matches!(updated, Updated::Installed { .. }), "{updated:?}");

    let selected = select(&host);
    assert_eq!(selected.origin, Origin::Installed);
    assert_eq!(selected.identity, identity);
    assert!(selected.warning().is_none());
    let in_use = selected.clone().into_in_use();
    assert_eq!(in_use.origin, "installed");
    assert_eq!(in_use.updated, date);
    assert_eq!(in_use.version, identity.version);

    // The same set again: nothing to do.
    let (again, _) = update(&plan, &selected, &Progress::off()).expect("up to date");
    assert!(matches!(again, Updated::UpToDate), "{again:?}");

    // A damaged file: the built-in set is used, with a warning that names the file.
    let cuda = plan.store.set_dir().join("cuda.toml");
    std::fs::write(&cuda, b"# emptied\n").expect("write");
    let fallback = select(&host);
    assert_eq!(fallback.origin, Origin::Embedded);
    let warning = fallback.warning().expect("a warning");
    assert!(warning.contains("is damaged"), "{warning}");
    assert!(warning.contains("cuda.toml"), "{warning}");
    assert_eq!(
        fallback.clone().into_in_use().warning.as_deref(),
        Some(warning.as_str())
    );
}

#[test]
fn the_built_in_set_replaces_a_damaged_installed_one() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let host = host_with_home(&home);
    let built_in: Vec<(&'static str, Vec<u8>)> = FILE_NAMES
        .iter()
        .map(|n| {
            (
                *n,
                set::embedded_text(n)
                    .unwrap_or_default()
                    .as_bytes()
                    .to_vec(),
            )
        })
        .collect();
    let plan = local_plan(tmp.path(), &home, &built_in, &key(4));
    let (first, _) = update(&plan, &select(&host), &Progress::off()).expect("runs");
    assert!(matches!(first, Updated::UpToDate), "{first:?}");

    // Install it by hand, then damage it.
    let Location::Dir(out) = &plan.location else {
        panic!("a folder plan");
    };
    let mut all: Vec<(String, Vec<u8>)> = Vec::new();
    for entry in std::fs::read_dir(out).expect("published") {
        let entry = entry.expect("entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        all.push((name, std::fs::read(entry.path()).expect("read")));
    }
    let pairs: Vec<(&str, &[u8])> = all
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let origin = store::Origin {
        source: "test".into(),
        installed: "2026-01-01".into(),
        key: String::new(),
    };
    plan.store.install(&pairs, &origin).expect("installed");
    std::fs::write(plan.store.set_dir().join("gpus.toml"), b"x").expect("damage");
    let damaged = select(&host);
    assert!(damaged.warning().is_some());

    let (repaired, _) = update(&plan, &damaged, &Progress::off()).expect("repairs");
    assert!(
        matches!(repaired, Updated::Installed { .. }),
        "{repaired:?}"
    );
    let selected = select(&host);
    assert_eq!(selected.origin, Origin::Installed);
    assert!(selected.warning().is_none());
}

#[test]
fn a_failed_update_keeps_the_installed_set() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let host = host_with_home(&home);
    let first = local_plan(
        tmp.path(),
        &home,
        &files_dated(&days_after_built_in(1)),
        &key(3),
    );
    update(&first, &select(&host), &Progress::off()).expect("installs");
    let before = select(&host).identity;

    // A newer set with a damaged file, published into another folder.
    let newer = tmp.path().join("newer");
    let second = local_plan(
        &newer,
        &home,
        &files_dated(&days_after_built_in(2)),
        &key(3),
    );
    let Location::Dir(out) = &second.location else {
        panic!("a folder plan");
    };
    std::fs::write(out.join("frameworks.toml"), b"tampered").expect("write");
    let error = update(&second, &select(&host), &Progress::off()).expect_err("refused");
    assert_eq!(error.kind(), "size_mismatch");
    assert_eq!(select(&host).identity, before);
}

#[test]
fn an_installed_set_older_than_the_built_in_one_is_not_used() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let host = host_with_home(&home);
    let files = files_dated("2020-01-01");
    let pairs: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (*n, b.as_slice())).collect();
    let checked = set::check_set(&pairs).expect("good");
    let index = Index::describe(&checked.identity).to_bytes();
    let mut all = pairs.clone();
    all.push((INDEX_FILE, &index));
    let store = Store::new(home.join(".local/share/gpu-doctor"));
    let origin = store::Origin {
        source: "test".into(),
        installed: "2020-01-02".into(),
        key: String::new(),
    };
    store.install(&all, &origin).expect("installed by hand");
    let selected = select(&host);
    assert_eq!(selected.origin, Origin::Embedded);
    assert!(matches!(selected.installed, InstalledState::Older(_)));
    assert!(selected.warning().is_none());
}

#[test]
fn locations_come_from_the_flag_the_config_or_the_placeholder() {
    let dirs = Dirs {
        config_file: Some(PathBuf::from("/c/config.toml")),
        data_dir: None,
    };
    let config = Config {
        manifest_url: Some("https://mirror.example/m/".into()),
        ..Config::default()
    };
    assert_eq!(
        location(None, &config, &dirs, false)
            .map(|l| l.display())
            .ok(),
        Some("https://mirror.example/m/".to_string())
    );
    assert_eq!(
        location(Some("/srv/m"), &config, &dirs, true).ok(),
        Some(Location::Dir("/srv/m".into()))
    );
    let error = location(None, &config, &dirs, true).expect_err("offline");
    assert_eq!(error.kind(), "offline");
    let error = location(None, &Config::default(), &dirs, false).expect_err("placeholder");
    assert_eq!(error.kind(), "no_published_location");
    assert!(error.is_usage());
    assert!(error.to_string().contains("/c/config.toml"), "{error}");
}

/// A rotation's hand-over: clients trust the old and the new key, and a set signed by either
/// installs; a set signed by a third key is refused naming every trusted key.
#[test]
fn several_trusted_keys_accept_either_signer_and_nothing_else() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (old, new, stranger) = (key(11), key(12), key(13));
    for (n, signer) in [(1, &new), (2, &old)] {
        let home = tmp.path().join(format!("home{n}"));
        let host = host_with_home(&home);
        let mut plan = local_plan(
            &tmp.path().join(format!("s{n}")),
            &home,
            &files_dated(&days_after_built_in(n)),
            signer,
        );
        plan.trusted = vec![old.public(), new.public()];
        let (updated, _) = update(&plan, &select(&host), &Progress::off()).expect("installs");
        assert!(matches!(updated, Updated::Installed { .. }), "{updated:?}");
    }
    let home = tmp.path().join("home3");
    let mut plan = local_plan(
        &tmp.path().join("s3"),
        &home,
        &files_dated(&days_after_built_in(1)),
        &stranger,
    );
    plan.trusted = vec![old.public(), new.public()];
    let error = update(&plan, &select(&host_with_home(&home)), &Progress::off())
        .expect_err("another signer");
    assert_eq!(error.kind(), "key_mismatch");
    let text = error.to_string();
    assert!(
        text.contains(&old.public().id()) && text.contains(&new.public().id()),
        "{text}"
    );
}

/// No key is built in: without --pubkey or manifest_pubkey the update is a usage error that
/// says what to pass; a key file listing two keys trusts both.
#[test]
fn without_a_trusted_key_the_update_says_what_to_do() {
    let error = trusted_keys(&[], &Config::default()).expect_err("no key");
    assert!(error.is_usage());
    assert_eq!(error.kind(), "no_trusted_key");
    let text = error.to_string();
    for needle in [
        "--pubkey FILE",
        "manifest_pubkey",
        "GPU_DOCTOR_MANIFEST_PUBKEY",
        "rotate",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("keys.pub");
    std::fs::write(
        &file,
        format!(
            "# old\n{}\n# new\n{}\n",
            key(1).public().to_hex(),
            key(2).public().to_hex()
        ),
    )
    .expect("write");
    let config = Config {
        manifest_pubkey: Some(file.clone()),
        ..Config::default()
    };
    assert_eq!(
        trusted_keys(&[], &config).expect("keys"),
        [key(1).public(), key(2).public()]
    );
    // --pubkey files replace the config's, and are all trusted together.
    let third = tmp.path().join("third.pub");
    std::fs::write(&third, key(3).public().to_hex()).expect("write");
    assert_eq!(
        trusted_keys(&[third, file], &config).expect("keys"),
        [key(3).public(), key(1).public(), key(2).public()]
    );
}
