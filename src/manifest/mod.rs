//! Compatibility tables loaded from `manifests/*.toml`, embedded in the binary.
