//! The command line's view of the domain's named values: a clap [`ValueEnum`] for each
//! [`Choice`], so `--fail-on`, `--via`, `--precision` and the others offer, complete and check
//! exactly the names the config file accepts, listed once in the enum's own module.

use clap::ValueEnum;
use clap::builder::PossibleValue;

use crate::choice::Choice;

macro_rules! value_enum_from_choice {
    ($($ty:ty),* $(,)?) => {$(
        impl ValueEnum for $ty {
            fn value_variants<'a>() -> &'a [Self] {
                <$ty as Choice>::ALL
            }

            fn to_possible_value(&self) -> Option<PossibleValue> {
                let value = PossibleValue::new(Choice::name(*self));
                Some(match Choice::help(*self) {
                    Some(help) => value.help(help),
                    None => value,
                })
            }
        }
    )*};
}

value_enum_from_choice!(
    crate::check::FailOn,
    crate::check::render::Format,
    crate::plan::Via,
    crate::guide::memory::Optimizer,
    crate::guide::precision::Precision,
    crate::present::paint::ColorChoice,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_reads_the_names_the_enums_list() {
        use crate::guide::memory::Optimizer;
        assert_eq!(
            Optimizer::from_str("8BIT-ADAM", true),
            Ok(Optimizer::EightBitAdam)
        );
        assert!(crate::check::FailOn::from_str("loud", true).is_err());
        let names: Vec<String> = crate::plan::Via::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value().map(|p| p.get_name().to_string()))
            .collect();
        assert_eq!(names, ["apt", "conda", "pip"]);
    }
}
