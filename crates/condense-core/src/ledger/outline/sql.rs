//! The outline of SQL: the tables, views, indexes and functions a script creates or alters.

/// What a line of SQL defines: a `CREATE TABLE`, `VIEW`, `INDEX` or `FUNCTION`, or an
/// `ALTER TABLE`, named without its quotes.
pub(super) fn statement(line: &str) -> Option<(&'static str, String)> {
    let t = line.trim_start();
    let upper = t.to_ascii_uppercase();
    for kw in ["CREATE TABLE ", "CREATE VIEW ", "CREATE INDEX ", "CREATE FUNCTION ", "ALTER TABLE "] {
        if upper.starts_with(kw) {
            let rest = t[kw.len()..].trim_start();
            let rest =
                if rest.to_ascii_uppercase().starts_with("IF NOT EXISTS ") { &rest[14..] } else { rest };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '"' | '`'))
                .collect();
            return Some((
                kw.trim_end().rsplit(' ').next().map_or("table", |k| match k {
                    "TABLE" => "table",
                    "VIEW" => "view",
                    "INDEX" => "index",
                    _ => "function",
                }),
                name.trim_matches(['"', '`']).to_owned(),
            ));
        }
    }
    None
}
