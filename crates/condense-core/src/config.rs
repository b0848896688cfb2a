//! Provider configuration forms: the fields a provider's configuration has (integer with range
//! and unit, boolean, text, profile), each checked on its own, so a settings panel can draw the
//! form and the registry can judge a configuration before the provider sees it.
//!
//! A provider describes its configuration once, on the configuration type: [`ConfigForm`] gives
//! its fields and cross-field rules; [`default_config`], [`schema`] and [`validate`] derive the
//! rest from the type, and [`Form`] carries them to the provider trait. The values shared by
//! providers (stored once by the host) are [`SharedSettings`].

use serde::de::DeserializeOwned;
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
    /// One of the strings in `options`.
    Choice,
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
    /// The allowed values, for a choice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

impl ConfigField {
    /// A whole-number field. Its default is the configuration type's, unless given with
    /// [`ConfigField::with_default`].
    pub fn integer(key: &str, label: &str, description: &str, min: i64, max: Option<i64>) -> Self {
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
            default: serde_json::Value::Null,
            shared: false,
            options: Vec::new(),
        }
    }

    /// An on/off field.
    pub fn boolean(key: &str, label: &str, description: &str) -> Self {
        ConfigField { kind: FieldKind::Boolean, min: None, ..Self::integer(key, label, description, 0, None) }
    }

    /// A free-text field.
    pub fn text(key: &str, label: &str, description: &str) -> Self {
        ConfigField { kind: FieldKind::Text, min: None, ..Self::integer(key, label, description, 0, None) }
    }

    /// A field naming an LLM profile; empty (the default) for none.
    pub fn profile(key: &str, label: &str, description: &str) -> Self {
        ConfigField {
            kind: FieldKind::Profile,
            min: None,
            default: "".into(),
            ..Self::integer(key, label, description, 0, None)
        }
    }

    /// A field holding one of `options`.
    pub fn choice(key: &str, label: &str, description: &str, options: &[&str]) -> Self {
        ConfigField {
            kind: FieldKind::Choice,
            min: None,
            options: options.iter().map(|o| (*o).to_owned()).collect(),
            ..Self::integer(key, label, description, 0, None)
        }
    }

    /// The same field with its own default, where the configuration type's is not what "reset to
    /// default" should show (e.g. the built-in prompt for an absent custom prompt).
    pub fn with_default(self, default: impl Into<serde_json::Value>) -> Self {
        ConfigField { default: default.into(), ..self }
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
            FieldKind::Choice if value.as_str().is_some_and(|v| self.options.iter().any(|o| o == v)) => {
                Ok(())
            }
            FieldKind::Choice => {
                Err(format!("{} must be one of {}, got {value}", self.key, self.options.join(", ")))
            }
        }
    }
}

/// The per-provider switch of the state ledger (see `crate::ledger`): on by default.
pub fn ledger_field() -> ConfigField {
    ConfigField::boolean(
        "ledger",
        "State ledger",
        "Keep, beside the condensed history, what it must not forget: the user's own words, the files touched, the commands run and the todo list, gathered by code from the hidden messages.",
    )
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

/// A configuration type that describes its own form: implemented once by each provider's
/// configuration struct. Defaults come from `Default`, reading from `Deserialize`; the form's
/// fields and the cross-field rules from here.
pub trait ConfigForm: Serialize + DeserializeOwned + Default {
    /// The form, in the order a settings panel shows it: one field per key, plus the shared
    /// values the provider uses (see [`SharedSettings`]). A field without a default of its own
    /// shows the value `Self::default()` serializes under its key.
    fn fields() -> Vec<ConfigField>;

    /// Rules across fields, run on a configuration whose every field passed its own check.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

/// The configuration a new registry entry starts with: `T::default()` as JSON.
pub fn default_config<T: ConfigForm>() -> serde_json::Value {
    serde_json::to_value(T::default()).expect("a configuration type serializes")
}

/// The form of `T`, with every field's default filled in.
pub fn schema<T: ConfigForm>() -> Vec<ConfigField> {
    let defaults = default_config::<T>();
    T::fields()
        .into_iter()
        .map(|field| match defaults.get(&field.key) {
            Some(value) if field.default.is_null() => ConfigField { default: value.clone(), ..field },
            _ => field,
        })
        .collect()
}

/// Reads a configuration: `null` means the defaults; an error names the field at fault (unknown
/// fields too, for types that deny them). No range or cross-field check: see [`validate`].
pub fn parse<T: DeserializeOwned + Default>(value: &serde_json::Value) -> Result<T, String> {
    if value.is_null() {
        return Ok(T::default());
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." { e.inner().to_string() } else { format!("{path}: {}", e.inner()) }
    })
}

/// Judges a configuration the way the registry does before storing it: every field present
/// against its form field ([`check_config`]), then the whole read as `T` ([`parse`]), then
/// [`ConfigForm::check`]. The message is the one to show beside the field.
pub fn validate<T: ConfigForm>(value: &serde_json::Value) -> Result<T, String> {
    check_config(&T::fields(), value)?;
    let config: T = parse(value)?;
    config.check()?;
    Ok(config)
}

/// A configuration type's form behind plain function pointers, so that the object-safe provider
/// trait can hand it over: `Form::of::<MyConfig>()`.
#[derive(Clone, Copy)]
pub struct Form {
    default_config: fn() -> serde_json::Value,
    schema: fn() -> Vec<ConfigField>,
    validate: fn(&serde_json::Value) -> Result<(), String>,
}

impl Form {
    /// The form of `T`.
    pub fn of<T: ConfigForm>() -> Self {
        Form {
            default_config: default_config::<T>,
            schema: schema::<T>,
            validate: |value: &serde_json::Value| validate::<T>(value).map(drop),
        }
    }

    /// See [`default_config`].
    pub fn default_config(&self) -> serde_json::Value {
        (self.default_config)()
    }

    /// See [`schema`].
    pub fn schema(&self) -> Vec<ConfigField> {
        (self.schema)()
    }

    /// See [`validate`].
    pub fn validate(&self, value: &serde_json::Value) -> Result<(), String> {
        (self.validate)(value)
    }
}

impl std::fmt::Debug for Form {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Form").field("schema", &self.schema()).finish()
    }
}

/// The configuration of a provider that has none: `{}` by default, an empty form, and any object
/// accepted (its keys are left to the provider).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoConfig {}

impl ConfigForm for NoConfig {
    fn fields() -> Vec<ConfigField> {
        Vec::new()
    }
}

/// The values stored once for every provider that uses them: the host keeps them outside the
/// providers' configurations, and a provider's form lists the ones it uses (marked `shared`) so
/// that a settings panel renders each once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SharedSettings {
    /// Instructions replacing the built-in summary prompt; absent for the built-in one.
    pub custom_prompt: Option<String>,
    /// The id of the LLM profile that writes summaries; absent for the chat's.
    pub condensing_profile: Option<String>,
}

impl SharedSettings {
    /// The form field of `custom_prompt`. A provider that writes summaries sets its default to
    /// its built-in prompt, what "reset to default" puts back.
    pub fn custom_prompt_field() -> ConfigField {
        ConfigField::text(
            "custom_prompt",
            "Summary instructions",
            "What the summary must contain. Empty: the built-in sectioned prompt. Shared by every provider that writes a summary.",
        )
        .multiline()
        .shared()
    }

    /// The form field of `condensing_profile`.
    pub fn condensing_profile_field() -> ConfigField {
        ConfigField::profile(
            "condensing_profile",
            "Condensing profile",
            "The LLM profile that writes summaries, e.g. a cheaper model than the chat's. Empty: the chat profile.",
        )
        .shared()
    }
}

impl ConfigForm for SharedSettings {
    fn fields() -> Vec<ConfigField> {
        vec![Self::custom_prompt_field(), Self::condensing_profile_field()]
    }

    fn check(&self) -> Result<(), String> {
        if self.custom_prompt.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err("custom_prompt is empty; leave it out to use the default prompt".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A made-up configuration: a bounded number, an optional one, a switch pair and a name.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct Demo {
        count: u32,
        limit: Option<u32>,
        left: bool,
        right: bool,
        name: String,
    }

    impl Default for Demo {
        fn default() -> Self {
            Demo { count: 4, limit: None, left: true, right: false, name: "demo".into() }
        }
    }

    impl ConfigForm for Demo {
        fn fields() -> Vec<ConfigField> {
            vec![
                ConfigField::integer("count", "Count", "How many.", 1, Some(10)).unit("items"),
                ConfigField::integer("limit", "Limit", "At most.", 0, None).optional().with_default(7),
                ConfigField::boolean("left", "Left", "The left switch."),
                ConfigField::boolean("right", "Right", "The right switch."),
                ConfigField::text("name", "Name", "What to call it."),
                SharedSettings::custom_prompt_field(),
            ]
        }

        fn check(&self) -> Result<(), String> {
            if !self.left && !self.right {
                return Err("turn on left, right or both".into());
            }
            Ok(())
        }
    }

    #[test]
    fn the_form_takes_its_defaults_from_the_type() {
        assert_eq!(
            default_config::<Demo>(),
            json!({"count": 4, "limit": null, "left": true, "right": false, "name": "demo"})
        );
        let fields = schema::<Demo>();
        let keys: Vec<&str> = fields.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys, ["count", "limit", "left", "right", "name", "custom_prompt"]);
        let defaults: Vec<&serde_json::Value> = fields.iter().map(|f| &f.default).collect();
        assert_eq!(
            defaults,
            [&json!(4), &json!(7), &json!(true), &json!(false), &json!("demo"), &json!(null)]
        );
        assert_eq!(fields[0].kind, FieldKind::Integer);
        assert_eq!(
            (fields[0].min, fields[0].max, fields[0].unit.as_deref()),
            (Some(1), Some(10), Some("items"))
        );
        assert!(fields[1].optional && !fields[0].optional);
        assert_eq!(fields[2].kind, FieldKind::Boolean);
        assert_eq!(fields[4].kind, FieldKind::Text);
        assert!(fields[5].shared && fields[5].multiline);
        assert_eq!(Form::of::<Demo>().schema(), fields);
        assert_eq!(Form::of::<Demo>().default_config(), default_config::<Demo>());
    }

    #[test]
    fn validation_checks_fields_then_reads_then_checks_the_whole() {
        assert_eq!(validate::<Demo>(&json!(null)).unwrap(), Demo::default());
        assert_eq!(validate::<Demo>(&json!({"count": 10, "limit": null})).unwrap().count, 10);
        // By range, word for word.
        assert_eq!(
            validate::<Demo>(&json!({"count": 0})).unwrap_err(),
            "count must be a whole number from 1 to 10, got 0"
        );
        assert_eq!(
            validate::<Demo>(&json!({"limit": -1})).unwrap_err(),
            "limit must be a whole number of 0 or more, got -1"
        );
        assert_eq!(
            validate::<Demo>(&json!({"left": "yes"})).unwrap_err(),
            "left must be true or false, got \"yes\""
        );
        assert_eq!(validate::<Demo>(&json!({"name": null})).unwrap_err(), "name needs a value");
        assert_eq!(
            validate::<Demo>(&json!([1])).unwrap_err(),
            "the configuration must be an object, got [1]"
        );
        // By reading: a shared field is typed by the configuration type, unknown keys are named.
        assert_eq!(
            validate::<Demo>(&json!({"custom_prompt": "x"})).unwrap_err(),
            "custom_prompt: unknown field `custom_prompt`, expected one of `count`, `limit`, `left`, `right`, `name`"
        );
        // By `check`, only once every field is valid.
        assert_eq!(validate::<Demo>(&json!({"left": false})).unwrap_err(), "turn on left, right or both");
        assert_eq!(
            Form::of::<Demo>().validate(&json!({"left": false, "count": 11})).unwrap_err(),
            "count must be a whole number from 1 to 10, got 11"
        );
        assert!(Form::of::<Demo>().validate(&json!({"left": false, "right": true})).is_ok());
    }

    #[test]
    fn no_config_accepts_any_object_and_shared_settings_refuse_an_empty_prompt() {
        let none = Form::of::<NoConfig>();
        assert_eq!(none.default_config(), json!({}));
        assert!(none.schema().is_empty());
        assert!(none.validate(&json!({"anything": 1})).is_ok());
        assert_eq!(none.validate(&json!(5)).unwrap_err(), "the configuration must be an object, got 5");

        let shared = schema::<SharedSettings>();
        assert!(shared.iter().all(|f| f.shared));
        assert_eq!(shared[1].kind, FieldKind::Profile);
        assert_eq!(shared[1].default, json!(""));
        assert_eq!(
            validate::<SharedSettings>(&json!({"custom_prompt": " "})).unwrap_err(),
            "custom_prompt is empty; leave it out to use the default prompt"
        );
        let ok =
            validate::<SharedSettings>(&json!({"custom_prompt": "Be brief.", "condensing_profile": "cheap"}));
        assert_eq!(ok.unwrap().condensing_profile.as_deref(), Some("cheap"));
    }
}
