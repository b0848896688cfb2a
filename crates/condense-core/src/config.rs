//! Provider configuration forms: the fields a provider's configuration has (integer with range
//! and unit, boolean, text, profile), each checked on its own, so a settings panel can draw the
//! form and the registry can judge a configuration before the provider sees it.

use serde::{Deserialize, Serialize};

/// What kind of value a configuration field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FieldKind {
    /// A whole number in `[min, max]`.
    Integer,
    /// On or off.
    Boolean,
    /// A string; `multiline` for a prompt.
    Text,
    /// The id of an LLM profile; empty for none.
    Profile,
}

/// One field of a provider's configuration form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConfigField {
    /// The key in the provider's configuration (or the shared value's key when `shared`).
    pub key: String,
    /// Label for people.
    pub label: String,
    /// One or two sentences on what the field does.
    pub description: String,
    /// The value's kind.
    pub kind: FieldKind,
    /// Smallest allowed value, for integers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<i64>,
    /// Largest allowed value, for integers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<i64>,
    /// Whether the field may be absent (null): the provider's own default applies.
    pub optional: bool,
    /// A text field for several lines.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multiline: bool,
    /// Unit shown after a number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// What "reset to default" puts back; for a prompt, the built-in prompt.
    pub default: serde_json::Value,
    /// A value stored once for every provider that uses it (the host keeps it outside the
    /// provider's configuration and hands it over), e.g. the custom summary prompt.
    pub shared: bool,
}

impl ConfigField {
    /// A whole-number field.
    pub fn integer(
        key: &str,
        label: &str,
        description: &str,
        min: i64,
        max: Option<i64>,
        default: i64,
    ) -> Self {
        ConfigField {
            key: key.into(),
            label: label.into(),
            description: description.into(),
            kind: FieldKind::Integer,
            min: Some(min),
            max,
            optional: false,
            multiline: false,
            unit: None,
            default: default.into(),
            shared: false,
        }
    }

    /// An on/off field.
    pub fn boolean(key: &str, label: &str, description: &str, default: bool) -> Self {
        ConfigField {
            kind: FieldKind::Boolean,
            min: None,
            default: default.into(),
            ..Self::integer(key, label, description, 0, None, 0)
        }
    }

    /// A free-text field.
    pub fn text(key: &str, label: &str, description: &str, default: &str) -> Self {
        ConfigField {
            kind: FieldKind::Text,
            min: None,
            default: default.into(),
            ..Self::integer(key, label, description, 0, None, 0)
        }
    }

    /// A field naming an LLM profile.
    pub fn profile(key: &str, label: &str, description: &str) -> Self {
        ConfigField {
            kind: FieldKind::Profile,
            min: None,
            default: "".into(),
            ..Self::integer(key, label, description, 0, None, 0)
        }
    }

    /// The same field with a unit.
    pub fn unit(self, unit: &str) -> Self {
        ConfigField { unit: Some(unit.into()), ..self }
    }

    /// The same field, allowed to be absent.
    pub fn optional(self) -> Self {
        ConfigField { optional: true, ..self }
    }

    /// The same field over several lines.
    pub fn multiline(self) -> Self {
        ConfigField { multiline: true, ..self }
    }

    /// The same field, shared between providers.
    pub fn shared(self) -> Self {
        ConfigField { shared: true, ..self }
    }

    /// Checks one value against the field; the message names the field and the allowed values.
    pub fn check(&self, value: &serde_json::Value) -> Result<(), String> {
        if value.is_null() {
            return if self.optional || self.shared {
                Ok(())
            } else {
                Err(format!("{} needs a value", self.key))
            };
        }
        match self.kind {
            FieldKind::Integer => {
                let n = value.as_i64().filter(|_| value.is_i64() || value.is_u64());
                let range = match (self.min, self.max) {
                    (Some(min), Some(max)) => format!(" from {min} to {max}"),
                    (Some(min), None) => format!(" of {min} or more"),
                    (None, Some(max)) => format!(" of {max} or less"),
                    (None, None) => String::new(),
                };
                match n {
                    Some(n) if self.min.is_none_or(|m| n >= m) && self.max.is_none_or(|m| n <= m) => Ok(()),
                    _ => Err(format!("{} must be a whole number{range}, got {value}", self.key)),
                }
            }
            FieldKind::Boolean if value.is_boolean() => Ok(()),
            FieldKind::Boolean => Err(format!("{} must be true or false, got {value}", self.key)),
            FieldKind::Text | FieldKind::Profile if value.is_string() => Ok(()),
            FieldKind::Text | FieldKind::Profile => {
                Err(format!("{} must be a string, got {value}", self.key))
            }
        }
    }
}

/// Checks a provider configuration against its schema: every field present has a valid value.
/// Keys the schema does not name are left to the provider's own check.
pub fn check_config(schema: &[ConfigField], config: &serde_json::Value) -> Result<(), String> {
    let Some(map) = config.as_object() else {
        return if config.is_null() {
            Ok(())
        } else {
            Err(format!("the configuration must be an object, got {config}"))
        };
    };
    for field in schema.iter().filter(|f| !f.shared) {
        if let Some(value) = map.get(&field.key) {
            field.check(value)?;
        }
    }
    Ok(())
}
