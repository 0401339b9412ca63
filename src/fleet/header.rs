//! The few top-level fields that decide whether a file is a node's report (its shape,
//! `fleet_schema_version`, `schema_version`, `tool.version`), read in one pass that keeps
//! nothing else: parsing the whole file into a `serde_json::Value` first cost 40 times its
//! size (64 MiB of `[{},{},...]` took 2.6 GB). Pure deserialisation.

use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A JSON value as far as a version check needs it: a whole number, another number (as JSON
/// writes it), a string, or only its kind.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar {
    Whole(u64),
    Number(String),
    Text(String),
    /// Its kind, as a sentence names it ("null", "a JSON array", ...).
    Other(&'static str),
}

impl Scalar {
    /// What kind of value it is, as a sentence names it.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Scalar::Whole(_) | Scalar::Number(_) => "a number",
            Scalar::Text(_) => "a string",
            Scalar::Other(kind) => kind,
        }
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Scalar, E> {
        Ok(Scalar::Other("a boolean"))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar::Whole(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Number(v.to_string()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Number(
            serde_json::Number::from_f64(v).map_or_else(|| v.to_string(), |n| n.to_string()),
        ))
    }
    fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Text(v.to_string()))
    }
    fn visit_unit<E>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other("a JSON array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other("an object"))
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

/// `tool`: its `version` when it is an object that has one.
struct ToolVersion(Option<Scalar>);

impl<'de> Deserialize<'de> for ToolVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ToolVersion, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ToolVersion;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ToolVersion, A::Error> {
                let mut version = None;
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key == "version" {
                        version = Some(map.next_value::<Scalar>()?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(ToolVersion(version))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<ToolVersion, A::Error> {
                ScalarVisitor.visit_seq(seq).map(|_| ToolVersion(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<ToolVersion, E> {
                Ok(ToolVersion(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<ToolVersion, E> {
                Ok(ToolVersion(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<ToolVersion, E> {
                Ok(ToolVersion(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<ToolVersion, E> {
                Ok(ToolVersion(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<ToolVersion, E> {
                Ok(ToolVersion(None))
            }
            fn visit_unit<E>(self) -> Result<ToolVersion, E> {
                Ok(ToolVersion(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// What a file's top level is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Header {
    /// An object, with the fields that decide.
    Object {
        fleet_schema_version: bool,
        schema_version: Option<Scalar>,
        tool_version: Option<Scalar>,
    },
    /// Not an object: its kind.
    Not(&'static str),
}

impl<'de> Deserialize<'de> for Header {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Header, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Header;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Header, A::Error> {
                let (mut fleet, mut schema, mut tool) = (false, None, None);
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    // A key given twice counts as its last value, as serde_json's map keeps it.
                    match &*key {
                        "fleet_schema_version" => {
                            map.next_value::<IgnoredAny>()?;
                            fleet = true;
                        }
                        "schema_version" => schema = Some(map.next_value::<Scalar>()?),
                        "tool" => tool = map.next_value::<ToolVersion>()?.0,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Header::Object {
                    fleet_schema_version: fleet,
                    schema_version: schema,
                    tool_version: tool,
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Header, A::Error> {
                ScalarVisitor.visit_seq(seq).map(|s| Header::Not(s.kind()))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Header, E> {
                Ok(Header::Not("a boolean"))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Header, E> {
                Ok(Header::Not("a number"))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Header, E> {
                Ok(Header::Not("a number"))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Header, E> {
                Ok(Header::Not("a number"))
            }
            fn visit_str<E>(self, _: &str) -> Result<Header, E> {
                Ok(Header::Not("a string"))
            }
            fn visit_unit<E>(self) -> Result<Header, E> {
                Ok(Header::Not("null"))
            }
        }
        d.deserialize_any(V)
    }
}
