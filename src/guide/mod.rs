//! Built-in guidance: will a model fit (`estimate`), which card to use (`advise`).

use crate::host::Host;

/// Arguments of `gpu-doctor estimate`.
#[derive(Debug, Clone, clap::Args)]
pub struct EstimateArgs {}

/// Arguments of `gpu-doctor advise`.
#[derive(Debug, Clone, clap::Args)]
pub struct AdviseArgs {}

/// Runs `estimate`.
#[must_use]
pub fn estimate(_host: &Host, _args: &EstimateArgs) -> u8 {
    eprintln!("gpu-doctor: estimate is not built yet");
    crate::app::exit::FAILED
}

/// Runs `advise`.
#[must_use]
pub fn advise(_host: &Host, _args: &AdviseArgs) -> u8 {
    eprintln!("gpu-doctor: advise is not built yet");
    crate::app::exit::FAILED
}
