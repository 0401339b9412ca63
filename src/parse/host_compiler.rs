//! What nvcc's host compiler is and what a toolkit accepts of it: a compiler's `--version`
//! banner, and the GCC limit in a toolkit's `crt/host_config.h`. Pure: text in.

/// `(kind, version)` from the first line of `gcc --version` / `clang --version`:
/// `gcc (Ubuntu 13.2.0-23ubuntu4) 13.2.0`, `g++ (GCC) 14.2.1 20240912 (Red Hat 14.2.1-3)`,
/// `cc (Debian 12.2.0-14) 12.2.0`, `Ubuntu clang version 18.1.3 (1ubuntu1)`. GCC's version is
/// the first dotted number after its package name in parentheses; clang's follows "version".
#[must_use]
pub fn banner(text: &str) -> Option<(&'static str, String)> {
    let first = text.lines().find(|l| !l.trim().is_empty())?.trim();
    let dotted = |w: &str| {
        let w = w.trim_end_matches(',');
        (w.contains('.')
            && w.split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
        .then(|| w.to_string())
    };
    if let Some(at) = first.find("clang version ") {
        let rest = first.get(at + "clang version ".len()..)?;
        let word = rest.split_whitespace().next()?;
        let version: String = word
            .split('-')
            .next()
            .map(str::to_string)
            .and_then(|v| dotted(&v))?;
        return Some(("clang", version));
    }
    // GCC: `NAME (PKGVERSION) VERSION ...`; without a package name, the first dotted word.
    let after = first
        .find(") ")
        .and_then(|i| first.get(i + 2..))
        .unwrap_or(first);
    let version = after.split_whitespace().find_map(dotted)?;
    Some(("gcc", version))
}

/// The newest GCC major a toolkit's `crt/host_config.h` accepts: its `#if __GNUC__ > N` before
/// "#error -- unsupported GNU version!". `None` when the header has no such check.
#[must_use]
pub fn gcc_max(host_config: &str) -> Option<u32> {
    let mut candidate = None;
    for line in host_config.lines() {
        let code = line.trim();
        if let Some(rest) = code.strip_prefix("#if") {
            let rest = rest.trim();
            candidate = rest
                .strip_prefix("__GNUC__")
                .map(str::trim)
                .and_then(|r| r.strip_prefix('>'))
                .and_then(|r| r.trim().parse::<u32>().ok());
        } else if code.starts_with("#error")
            && code.contains("unsupported GNU version")
            && let Some(n) = candidate
        {
            return Some(n);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcc_and_clang_banners_give_kind_and_version() {
        for (text, kind, version) in [
            (
                "gcc (Ubuntu 13.2.0-23ubuntu4) 13.2.0\nCopyright (C) 2023",
                "gcc",
                "13.2.0",
            ),
            (
                "g++ (GCC) 14.2.1 20240912 (Red Hat 14.2.1-3)\n",
                "gcc",
                "14.2.1",
            ),
            ("cc (Debian 12.2.0-14) 12.2.0\n", "gcc", "12.2.0"),
            ("gcc (GCC) 15.1.1 20250425\n", "gcc", "15.1.1"),
            (
                "Ubuntu clang version 18.1.3 (1ubuntu1)\nTarget: x86_64",
                "clang",
                "18.1.3",
            ),
            ("clang version 19.1.7-rc1\n", "clang", "19.1.7"),
        ] {
            assert_eq!(banner(text), Some((kind, version.to_string())), "{text}");
        }
        assert_eq!(banner(""), None);
        assert_eq!(banner("bash: gcc: command not found"), None);
    }

    #[test]
    fn the_gnu_limit_is_the_check_before_its_error() {
        let header = "#if defined(__GNUC__)\n\n#if __GNUC__ > 14\n\n#error -- unsupported GNU \
                      version! gcc versions later than 14 are not supported!\n\n#endif\n";
        assert_eq!(gcc_max(header), Some(14));
        assert_eq!(
            gcc_max("#if __ICC != 1500\n#error -- unsupported ICC configuration!\n"),
            None
        );
        assert_eq!(gcc_max(""), None);
    }
}
