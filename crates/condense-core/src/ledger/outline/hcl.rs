//! The outline of Terraform and other HCL files (`.tf`, `.tfvars`, `.hcl`): the blocks at the
//! top level (`resource "google_service_account" "app"` → `resource google_service_account.app`),
//! the names a `locals` block defines, and in a resource's, data source's or module's body the
//! values worth keeping: the IAM roles it grants, the accounts it names, the resources it refers
//! to. A `.tfvars` file's names only, never its values.
//!
//! Read line by line, keeping count of the brackets open (outside strings, comments and
//! here-documents) to know which block a line stands in and how deep.

use super::lines::Found;

/// The block types an outline names by their own word: Terraform's, then Terragrunt's,
/// Packer's, Nomad's and Docker Bake's. Any other block is a `block`.
const BLOCKS: &[&str] = &[
    "resource",
    "data",
    "ephemeral",
    "module",
    "variable",
    "output",
    "provider",
    "locals",
    "terraform",
    "moved",
    "import",
    "removed",
    "check",
    "include",
    "dependency",
    "dependencies",
    "generate",
    "remote_state",
    "source",
    "build",
    "packer",
    "job",
    "target",
    "group",
];

/// The blocks whose attributes are read for roles, accounts and references.
const BODIES: &[&str] = &["resource", "data", "module"];

/// The first words of a reference that names no resource (a variable, a local, a loop's item).
const NOT_RESOURCES: &[&str] = &["var", "local", "each", "count", "path", "self", "terraform"];

/// How many characters of a value an outline keeps.
const VALUE_CHARS: usize = 80;

/// A name at the start of `s` (letters, digits, `_`, `-`), and what follows it.
fn word(s: &str) -> (&str, &str) {
    let len = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(s.len());
    s.split_at(len)
}

/// A block's header on a line, `type "label" label {`: its type and labels.
fn header(t: &str) -> Option<(&str, Vec<&str>)> {
    let (kind, mut rest) = word(t);
    if kind.is_empty() || kind.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let mut labels = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.starts_with('{') {
            return Some((kind, labels));
        }
        if let Some(quoted) = rest.strip_prefix('"') {
            let (label, after) = quoted.split_once('"')?;
            labels.push(label);
            rest = after;
        } else {
            let (label, after) = word(rest);
            if label.is_empty() {
                return None;
            }
            labels.push(label);
            rest = after;
        }
    }
}

/// An attribute's assignment on a line, `name = value`: its name and value.
fn attribute(t: &str) -> Option<(&str, &str)> {
    let (name, rest) = word(t);
    let value = rest.trim_start().strip_prefix('=')?;
    (!name.is_empty() && !value.starts_with(['=', '>'])).then(|| (name, value.trim()))
}

/// Whether a value names a resource, bare (`google_sql_database_instance.main.name`,
/// `module.vpc.network_id`, `data.google_project.this.number`), not a variable or a local.
fn is_reference(value: &str) -> bool {
    let parts: Vec<&str> = value.split('.').collect();
    let segment = |s: &&str| {
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '[' | ']' | '*'))
    };
    if parts.len() < 2 || !parts.iter().all(segment) || NOT_RESOURCES.contains(&parts[0]) {
        return false;
    }
    match parts[0] {
        "module" => true,
        "data" => parts.len() >= 3 && parts[1].contains('_'),
        first => {
            first.contains('_')
                && first.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        }
    }
}

/// Whether a quoted value is an IAM role: Google Cloud's (`roles/cloudsql.client`,
/// `projects/p/roles/custom`) or an AWS IAM ARN.
fn is_role(text: &str) -> bool {
    text.starts_with("roles/") || text.contains("/roles/") || text.starts_with("arn:aws:iam::")
}

/// Whether a quoted value is an account written as an email (`app@p.iam.gserviceaccount.com`),
/// with an IAM member's prefix (`serviceAccount:`, `user:`, `group:`) or without.
fn is_account(text: &str) -> bool {
    let text = text.split_once(':').map_or(text, |(_, rest)| rest);
    let Some((user, domain)) = text.split_once('@') else { return false };
    !user.is_empty()
        && domain.contains('.')
        && !domain.contains('@')
        && !text.contains(char::is_whitespace)
        && !text.contains("${")
}

/// Whether a quoted value refers to a resource inside an interpolation
/// (`serviceAccount:${google_service_account.app.email}`).
fn interpolates_reference(text: &str) -> bool {
    text.split("${").skip(1).any(|inside| inside.split('}').next().is_some_and(|r| is_reference(r.trim())))
}

/// The roles among the quoted strings of a value (`toset(["roles/a", "roles/b"])`).
fn roles_in(value: &str) -> Vec<(&'static str, String)> {
    value
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|text| is_role(text))
        .map(|text| ("role", text.chars().take(VALUE_CHARS).collect()))
        .collect()
}

/// What an attribute of a resource's body is worth keeping, for its value or each of a one-line
/// list's items: a role (kind `role`, the role), an account or a resource referred to (kind `=`,
/// `name=value`); else the roles quoted anywhere in the value.
fn telling(name: &str, value: &str) -> Vec<(&'static str, String)> {
    let value = value.trim_end_matches(',').trim();
    let items: Vec<&str> = match value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
        Some(list) => list.split(',').map(str::trim).filter(|i| !i.is_empty()).collect(),
        None => vec![value],
    };
    let mut out = Vec::new();
    for item in items {
        let keep = |text: &str| format!("{name}={}", text.chars().take(VALUE_CHARS).collect::<String>());
        match item.strip_prefix('"').and_then(|i| i.strip_suffix('"')) {
            Some(text) if is_role(text) => out.extend(roles_in(item)),
            Some(text) if is_account(text) || interpolates_reference(text) => out.push(("=", keep(text))),
            Some(_) => {}
            None if is_reference(item) => out.push(("=", keep(item))),
            None => {}
        }
    }
    if out.is_empty() {
        out = roles_in(value);
    }
    out
}

/// How an outline names a top-level block: its type as its kind (else `block`), its labels
/// joined by `.` as its name (`google_service_account.app`), `{}` when it has none.
fn block_symbol(kind: &str, labels: &[&str]) -> (&'static str, String) {
    let name = if labels.is_empty() { "{}".to_owned() } else { labels.join(".") };
    match BLOCKS.iter().find(|b| **b == kind) {
        Some(b) => (b, name),
        None if labels.is_empty() => ("block", kind.to_owned()),
        None => ("block", format!("{kind} {name}")),
    }
}

/// What one line of an HCL file names, read alone (as a diff's added line is): a block's header
/// at the top level, a name assigned there (a `.tfvars` file's variable, `vars`), or an indented
/// attribute's role, account or reference.
pub(super) fn hcl_line(line: &str, vars: bool) -> Option<(&'static str, String)> {
    let t = line.trim_start();
    let top = t.len() == line.len();
    if top && let Some((kind, labels)) = header(t) {
        return Some(block_symbol(kind, &labels));
    }
    let (name, value) = attribute(t)?;
    match (top, vars) {
        (true, true) => Some(("var", name.to_owned())),
        (true, false) => Some(("key", name.to_owned())),
        (false, true) => None,
        (false, false) => telling(name, value).into_iter().next(),
    }
}

/// Where an HCL reader stands in the text.
#[derive(Default)]
struct HclState {
    /// How many braces, brackets and parentheses are open.
    depth: usize,
    /// The type of the top-level block the line stands in.
    block: Option<&'static str>,
    /// Inside a `/* … */` comment.
    comment: bool,
    /// Inside a here-document, until the line that is this word.
    heredoc: Option<String>,
}

impl HclState {
    /// Reads the brackets, strings and comments of one line, and a here-document it opens.
    fn scan(&mut self, line: &str) {
        let mut chars = line.chars().peekable();
        // Inside a string: how many interpolations (`${…}`) are open in it.
        let mut string: Option<usize> = None;
        while let Some(c) = chars.next() {
            if self.comment {
                if c == '*' && chars.next_if_eq(&'/').is_some() {
                    self.comment = false;
                }
                continue;
            }
            if let Some(open) = string.as_mut() {
                match c {
                    '\\' => {
                        chars.next();
                    }
                    '$' | '%' if chars.next_if_eq(&'{').is_some() => *open += 1,
                    '}' if *open > 0 => *open -= 1,
                    '"' if *open == 0 => string = None,
                    _ => {}
                }
                continue;
            }
            match c {
                '#' => return,
                '/' if chars.next_if_eq(&'/').is_some() => return,
                '/' if chars.next_if_eq(&'*').is_some() => self.comment = true,
                '"' => string = Some(0),
                '{' | '[' | '(' => self.depth += 1,
                '}' | ']' | ')' => self.depth = self.depth.saturating_sub(1),
                '<' if chars.next_if_eq(&'<').is_some() => {
                    let rest: String = chars.by_ref().collect();
                    let rest = rest.strip_prefix('-').unwrap_or(&rest);
                    let (end, _) = word(rest.trim_matches('"'));
                    if !end.is_empty() {
                        self.heredoc = Some(end.to_owned());
                    }
                    return;
                }
                _ => {}
            }
        }
    }
}

/// The outline of an HCL file's numbered `lines`: its top-level blocks; the names its `locals`
/// define (kind `local`); a `terraform` block's backend; in a resource's, data source's or
/// module's body (its attributes, not a nested block's) the roles it grants, the accounts it
/// names and the resources it refers to; and the names assigned at the top level, of a
/// `.tfvars` file's variables (`vars`, kind `var`) or an `.hcl` file's inputs (kind `key`),
/// never their values.
pub(super) fn hcl(lines: &[(usize, &str)], vars: bool) -> Vec<Found> {
    let mut out = Vec::new();
    let mut st = HclState::default();
    for &(n, line) in lines {
        if let Some(end) = &st.heredoc {
            if line.trim() == end {
                st.heredoc = None;
            }
            continue;
        }
        let t = line.trim();
        if !st.comment {
            match st.depth {
                // An indented line at no depth is a piece of a body (an edit's text): read alone.
                0 => match header(t).filter(|_| !line.starts_with(char::is_whitespace)) {
                    Some((kind, labels)) => {
                        let (kind, name) = block_symbol(kind, &labels);
                        st.block = Some(kind);
                        out.push((n, kind, name));
                    }
                    None => out.extend(hcl_line(line, vars).map(|(kind, name)| (n, kind, name))),
                },
                1 => match (st.block, attribute(t), header(t)) {
                    (Some("locals"), Some((name, _)), _) => out.push((n, "local", name.to_owned())),
                    (Some(block), Some((name, value)), _) if BODIES.contains(&block) => {
                        out.extend(telling(name, value).into_iter().map(|(kind, name)| (n, kind, name)))
                    }
                    (Some("terraform"), None, Some(("backend" | "cloud", labels))) => {
                        out.push((n, "backend", labels.first().map_or("cloud", |l| *l).to_owned()))
                    }
                    _ => {}
                },
                // A role alone on its line: an item of a list over several lines.
                _ if matches!(st.block, Some(b) if b == "locals" || BODIES.contains(&b))
                    && t.trim_end_matches(',').starts_with('"')
                    && t.trim_end_matches(',').ends_with('"') =>
                {
                    out.extend(roles_in(t).into_iter().map(|(kind, name)| (n, kind, name)))
                }
                _ => {}
            }
        }
        st.scan(line);
        if st.depth == 0 {
            st.block = None;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{outline, rendered};

    /// A Terraform file as Claude Code's Read tool prints it.
    const MAIN_TF: &str = r#"     1→terraform {
     2→  required_version = ">= 1.6"
     3→  backend "gcs" {
     4→    bucket = "acme-tf-state"
     5→  }
     6→}
     7→
     8→provider "google" {
     9→  project = var.project_id
    10→  region  = var.region
    11→}
    12→
    13→locals {
    14→  app_name = "billing-api"
    15→  labels = {
    16→    team = "payments"
    17→  }
    18→}
    19→
    20→variable "project_id" {
    21→  type        = string
    22→  description = "The project to deploy to."
    23→}
    24→
    25→resource "google_service_account" "app" {
    26→  account_id   = "billing-api"
    27→  display_name = "Billing API (${local.app_name})"
    28→}
    29→
    30→resource "google_project_iam_member" "app_sql" {
    31→  project = var.project_id
    32→  role    = "roles/cloudsql.client"
    33→  member  = "serviceAccount:${google_service_account.app.email}"
    34→}
    35→
    36→resource "google_cloud_run_v2_service" "api" {
    37→  name     = local.app_name
    38→  location = var.region
    39→  template {
    40→    service_account = google_service_account.app.email
    41→    containers {
    42→      image = "gcr.io/acme/billing:latest"
    43→    }
    44→  }
    45→  depends_on = [google_project_iam_member.app_sql, google_sql_database_instance.main]
    46→}
    47→
    48→data "google_sql_database_instance" "main" {
    49→  name = "billing-db"
    50→}
    51→
    52→module "vpc" {
    53→  source  = "terraform-google-modules/network/google"
    54→  network = "default"
    55→  # role = "roles/owner" is granted elsewhere.
    56→}
    57→
    58→output "sql_connection" {
    59→  value = data.google_sql_database_instance.main.connection_name
    60→}"#;

    #[test]
    fn terraform_blocks_locals_and_what_a_resource_grants() {
        assert_eq!(
            rendered("infra/main.tf", MAIN_TF, 1),
            [
                "terraform {} l.1",
                "backend gcs l.3",
                "provider google l.8",
                "locals {} l.13",
                "local app_name l.14",
                "local labels l.15",
                "variable project_id l.20",
                "resource google_service_account.app l.25",
                "resource google_project_iam_member.app_sql l.30",
                "role roles/cloudsql.client l.32",
                "= member=serviceAccount:${google_service_account.app.email} l.33",
                "resource google_cloud_run_v2_service.api l.36",
                "= depends_on=google_project_iam_member.app_sql l.45",
                "= depends_on=google_sql_database_instance.main l.45",
                "data google_sql_database_instance.main l.48",
                "module vpc l.52",
                "output sql_connection l.58"
            ]
        );
    }

    #[test]
    fn roles_accounts_lists_and_heredocs() {
        let text = "locals {\n  app_roles = [\n    \"roles/cloudsql.client\",\n    \"roles/secretmanager.secretAccessor\",\n    \"not a role\",\n  ]\n}\nresource \"google_project_iam_member\" \"app\" {\n  for_each = toset([\"roles/run.invoker\", \"roles/pubsub.publisher\"])\n  role     = each.value\n}\n";
        assert_eq!(
            rendered("iam.tf", text, 1),
            [
                "locals {} l.1",
                "local app_roles l.2",
                "role roles/cloudsql.client l.3",
                "role roles/secretmanager.secretAccessor l.4",
                "resource google_project_iam_member.app l.8",
                "role roles/run.invoker l.9",
                "role roles/pubsub.publisher l.9"
            ]
        );
        let text = "resource \"google_project_iam_binding\" \"viewers\" {\n  role    = \"projects/acme/roles/billingViewer\"\n  members = [\"user:ana@acme.com\", \"group:ops@acme.com\", var.extra]\n  condition {\n    title = \"expires\"\n  }\n}\nresource \"aws_iam_role_policy_attachment\" \"read\" {\n  role       = aws_iam_role.app.name\n  policy_arn = \"arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess\"\n  policy = <<-EOT\n    resource \"not\" \"a_block\" {\n    role = \"roles/owner\"\n  EOT\n}\n/* resource \"commented\" \"out\" {\n} */\nresource \"aws_s3_bucket\" \"logs\" {}";
        assert_eq!(
            rendered("iam.tf", text, 1),
            [
                "resource google_project_iam_binding.viewers l.1",
                "role projects/acme/roles/billingViewer l.2",
                "= members=user:ana@acme.com l.3",
                "= members=group:ops@acme.com l.3",
                "resource aws_iam_role_policy_attachment.read l.8",
                "= role=aws_iam_role.app.name l.9",
                "role arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess l.10",
                "resource aws_s3_bucket.logs l.18"
            ]
        );
    }

    #[test]
    fn a_piece_of_a_body_is_read_alone() {
        // The new text of an edit inside a resource: its lines stand at no depth, indented.
        let piece = "  role    = \"roles/cloudsql.client\"\n  member  = \"serviceAccount:${google_service_account.app.email}\"\n  project = var.project_id";
        assert_eq!(
            rendered("infra/iam.tf", piece, 1),
            [
                "role roles/cloudsql.client l.1",
                "= member=serviceAccount:${google_service_account.app.email} l.2"
            ]
        );
        assert!(rendered("prod.tfvars", "  password = \"ana@acme.com\"", 1).is_empty());
    }

    #[test]
    fn tfvars_names_only_and_other_hcl() {
        let tfvars = "     1\tproject_id  = \"acme-prod\"\n     2\tdb_password = \"sk-live-123\"\n     3\tlabels = {\n     4\t  owner = \"ana@acme.com\"\n     5\t}";
        let shown = rendered("envs/prod.tfvars", tfvars, 1);
        assert_eq!(shown, ["var project_id l.1", "var db_password l.2", "var labels l.3"]);
        let diff = "+++ b/envs/prod.tfvars\n@@ -1,2 +1,3 @@ db_password = \"sk-live-123\"\n+api_key = \"sk-live-123\"";
        let shown: Vec<String> = outline("x.diff", diff, 1, 10).iter().map(|s| s.render()).collect();
        assert_eq!(shown, ["file envs/prod.tfvars l.1", "hunk in db_password l.2", "+ api_key l.3"]);
        // Terragrunt: its blocks, and the names it assigns at the top level.
        let terragrunt = "include \"root\" {\n  path = find_in_parent_folders()\n}\ndependency \"vpc\" {\n  config_path = \"../vpc\"\n}\ninputs = {\n  network = dependency.vpc.outputs.network\n}\nweird_block {\n}";
        assert_eq!(
            rendered("live/prod/app/terragrunt.hcl", terragrunt, 1),
            ["include root l.1", "dependency vpc l.4", "key inputs l.7", "block weird_block l.10"]
        );
    }
}
