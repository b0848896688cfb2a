//! The outline of SQL: what a script creates (tables, views, indexes, functions, procedures,
//! triggers, types, schemas, sequences) and the tables it alters, each named without its quotes.

/// The objects a `CREATE` makes, by the word that names them, and the kind an outline gives
/// each.
const OBJECTS: &[(&str, &str)] = &[
    ("TABLE", "table"),
    ("VIEW", "view"),
    ("INDEX", "index"),
    ("FUNCTION", "function"),
    ("PROCEDURE", "procedure"),
    ("TRIGGER", "trigger"),
    ("TYPE", "type"),
    ("SCHEMA", "schema"),
    ("SEQUENCE", "sequence"),
];

/// The words that may stand between `CREATE` and the object's kind (`CREATE OR REPLACE VIEW`,
/// `CREATE UNIQUE INDEX`, `CREATE TEMP TABLE`, `CREATE MATERIALIZED VIEW`, MySQL's
/// `CREATE DEFINER=… PROCEDURE`).
const MODIFIERS: &[&str] = &[
    "OR",
    "REPLACE",
    "UNIQUE",
    "TEMP",
    "TEMPORARY",
    "UNLOGGED",
    "MATERIALIZED",
    "GLOBAL",
    "LOCAL",
    "RECURSIVE",
    "CONSTRAINT",
    "CLUSTERED",
    "NONCLUSTERED",
    "SQL",
    "SECURITY",
    "DEFINER",
    "INVOKER",
];

/// The words that may stand between the object's kind and its name (`IF NOT EXISTS`,
/// `CONCURRENTLY`, `ALTER TABLE ONLY`, `IF EXISTS`).
const BEFORE_NAME: &[&str] = &["IF", "NOT", "EXISTS", "CONCURRENTLY", "ONLY"];

/// An object's name as written (`public."Users"(`, `[dbo].[Users]`, `` `shop`.`orders` ``),
/// without its quotes and what follows it.
fn object_name(word: &str) -> String {
    word.split('(')
        .next()
        .unwrap_or("")
        .trim_end_matches([';', ','])
        .chars()
        .filter(|c| !matches!(c, '"' | '`' | '[' | ']'))
        .collect()
}

/// What a line of SQL defines: a `CREATE` of a table, view, index, function, procedure,
/// trigger, type, schema or sequence, or an `ALTER TABLE` (kind `table`), named without quotes.
/// An index without a name (`CREATE INDEX ON t (c)`) names nothing.
pub(super) fn statement(line: &str) -> Option<(&'static str, String)> {
    let mut words = line.split_whitespace().peekable();
    let first = words.next()?.to_ascii_uppercase();
    let kind = match first.as_str() {
        "CREATE" => {
            while words.next_if(|w| is_modifier(w)).is_some() {}
            let object = words.next()?.to_ascii_uppercase();
            OBJECTS.iter().find(|(word, _)| *word == object)?.1
        }
        "ALTER" if words.next()?.eq_ignore_ascii_case("TABLE") => "table",
        _ => return None,
    };
    while words.next_if(|w| BEFORE_NAME.iter().any(|b| w.eq_ignore_ascii_case(b))).is_some() {}
    let name = words.next()?;
    (!name.eq_ignore_ascii_case("ON")).then(|| (kind, object_name(name)))
}

/// Whether a word may stand between `CREATE` and the object's kind: one of [`MODIFIERS`], or a
/// `DEFINER=…` or `ALGORITHM=…` clause.
fn is_modifier(word: &str) -> bool {
    let upper = word.to_ascii_uppercase();
    MODIFIERS.contains(&upper.as_str()) || upper.starts_with("DEFINER=") || upper.starts_with("ALGORITHM=")
}

#[cfg(test)]
mod tests {
    use super::super::rendered;

    #[test]
    fn a_migration_outlines_what_it_creates_and_alters() {
        let text = "     1→-- 0042_billing.sql\n     2→CREATE EXTENSION IF NOT EXISTS pgcrypto;\n     3→CREATE SCHEMA IF NOT EXISTS billing;\n     4→CREATE TYPE billing.charge_status AS ENUM ('pending', 'paid');\n     5→create table if not exists billing.\"Charges\" (\n     6→    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),\n     7→    status billing.charge_status NOT NULL\n     8→);\n     9→CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS charges_idem_key ON billing.\"Charges\" (idem_key);\n    10→CREATE INDEX ON billing.\"Charges\" (status);\n    11→CREATE OR REPLACE FUNCTION billing.touch_updated_at() RETURNS trigger AS $$\n    12→CREATE TRIGGER charges_touch BEFORE UPDATE ON billing.\"Charges\"\n    13→CREATE MATERIALIZED VIEW billing.daily_totals AS\n    14→ALTER TABLE ONLY billing.\"Charges\" ADD COLUMN refunded_at timestamptz;\n    15→-- CREATE TABLE old_charges (id int);\n    16→CREATE DEFINER=`root`@`%` PROCEDURE `shop`.`close_day`()\n    17→CREATE TABLE [dbo].[Invoices] (";
        assert_eq!(
            rendered("db/migrations/0042_billing.sql", text, 1),
            [
                "schema billing l.3",
                "type billing.charge_status l.4",
                "table billing.Charges l.5",
                "index charges_idem_key l.9",
                "function billing.touch_updated_at l.11",
                "trigger charges_touch l.12",
                "view billing.daily_totals l.13",
                "procedure shop.close_day l.16",
                "table dbo.Invoices l.17"
            ]
        );
    }
}
