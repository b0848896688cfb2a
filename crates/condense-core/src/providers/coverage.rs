//! How much of what the conversation is likely to need next a condensation keeps in view: the
//! proxy `smart` chooses between its candidates by, computed at condensation time from the
//! conversation alone (it knows nothing of the turns to come).
//!
//! Every name the conversation uses (paths, identifiers, error names, `code spans`: by
//! [`crate::ledger::names_in`]) is weighed by its uses, each use the more the later it came (a
//! use in the latest message counts three times one in the first) and the model's own uses half
//! again as much as the ones it only read, since the model names next what it worked with last.
//! A candidate's coverage is the weight of the names still in its view over the weight of all.
//! Recency is the strongest single predictor of what an agent refers to next, so plain truncation
//! scores well by this measure; a pipeline that shaves everything old a little scores well only
//! when what it shaved was not in use.

use std::collections::HashMap;

use crate::ledger::{Haystack, names_in, normalize};
use crate::model::{Message, Role};

use super::relevance::texts;

/// The most names a candidate's view is searched for.
const MAX_NAMES: usize = 2000;

/// The names of a conversation with their weights.
pub(crate) struct Demand {
    names: Vec<String>,
    weights: Vec<f64>,
    total: f64,
}

impl Demand {
    /// The weighed names of `view` (the messages the model reads, in order).
    pub(crate) fn of(view: &[&Message]) -> Demand {
        let n = view.len().max(1) as f64;
        // By the name as written first (no copy per use); names that read the same normalized
        // are one after.
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut written: Vec<&str> = Vec::new();
        let mut weights: Vec<f64> = Vec::new();
        let mut last: Vec<usize> = Vec::new();
        for (i, m) in view.iter().enumerate() {
            let late = 1.0 + 2.0 * i as f64 / n;
            let own = if m.role == Role::Assistant { 1.5 } else { 1.0 };
            for text in texts(m) {
                for name in names_in(text) {
                    let k = *index.entry(name).or_insert_with(|| {
                        written.push(name);
                        weights.push(0.0);
                        last.push(usize::MAX);
                        written.len() - 1
                    });
                    // A message counts once however often it names it.
                    if last[k] != i {
                        last[k] = i;
                        weights[k] += late * own;
                    }
                }
            }
        }
        let mut by_key: HashMap<String, usize> = HashMap::new();
        let mut names: Vec<String> = Vec::new();
        let mut merged: Vec<f64> = Vec::new();
        for (name, weight) in written.into_iter().zip(weights) {
            let key = normalize(name);
            if key.chars().count() < 4 {
                continue;
            }
            match by_key.get(&key) {
                Some(&k) => merged[k] += weight,
                None => {
                    by_key.insert(key.clone(), names.len());
                    names.push(key);
                    merged.push(weight);
                }
            }
        }
        let weights = merged;
        // The total over every name; only the heaviest are looked for in a candidate's view (the
        // rest, each used once long ago, weigh little and would cost the search most).
        let total = weights.iter().sum();
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]).then(a.cmp(&b)));
        order.truncate(MAX_NAMES);
        let names = order.iter().map(|&k| std::mem::take(&mut names[k])).collect();
        let weights = order.iter().map(|&k| weights[k]).collect();
        Demand { names, weights, total }
    }

    /// The share of the weight whose names `view` still shows, from 0 to 1 (1 when there are no
    /// names).
    #[cfg(test)]
    pub(crate) fn coverage(&self, view: &[&Message]) -> f64 {
        self.coverage_with(view, "")
    }

    /// [`Demand::coverage`] of `view` with `beside` (the ledger the condensation will add) in view
    /// too.
    pub(crate) fn coverage_with(&self, view: &[&Message], beside: &str) -> f64 {
        if self.total <= 0.0 {
            return 1.0;
        }
        let mut haystack = Haystack::of(view);
        haystack.push(&normalize(beside));
        let found = haystack.find(self.names.iter().map(String::as_str));
        found.iter().zip(&self.weights).filter(|(f, _)| **f).map(|(_, w)| w).sum::<f64>() / self.total
    }
}

/// The ledger a condensation's result will carry, gathered as the template gathers it from the
/// messages the run hid (each hidden tool result read with the visible call that made it), within the
/// working state's budget for `target`: what a candidate keeps in view beside its messages. The
/// names of what was hidden are left out of the estimate: both candidates' ledgers list them
/// alike, and they are what costs most to gather.
pub(crate) fn ledger_text(
    before: &[Message],
    after: &[Message],
    target: usize,
    tokens: &dyn crate::tokens::TokenCounter,
) -> String {
    use crate::ledger::{Budget, Ledger, Live};
    use crate::provider::{hidden_by_run, with_calls};
    let hidden: Vec<(Option<usize>, &Message)> =
        hidden_by_run(before, after, |m| !m.is_visible()).into_iter().map(|(i, n)| (n, &after[i])).collect();
    let gathered = with_calls(after, &hidden);
    if gathered.is_empty() {
        return String::new();
    }
    let ledger = Ledger::of_numbered(&gathered);
    ledger.render_within(Budget::for_target(Some(target), target), tokens, &Live::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ContentBlock;

    fn m(id: &str, role: Role, text: &str) -> Message {
        Message::new(id, role, vec![ContentBlock::text(text)])
    }

    #[test]
    fn later_and_own_uses_weigh_more() {
        let view = [
            m("1", Role::User, "Look at old_helper in src/old.rs"),
            m("2", Role::Assistant, "I read src/old.rs; old_helper is unused."),
            m("3", Role::User, "Now fix parse_config in src/config.rs"),
            m("4", Role::Assistant, "parse_config in src/config.rs fails on empty input."),
        ];
        let all: Vec<&Message> = view.iter().collect();
        let demand = Demand::of(&all);
        assert!((demand.coverage(&all) - 1.0).abs() < 1e-9);
        let recent = demand.coverage(&[&view[2], &view[3]]);
        let old = demand.coverage(&[&view[0], &view[1]]);
        assert!(recent > old, "recent {recent} old {old}");
        assert!(recent > 0.5 && recent < 1.0, "{recent}");
        assert_eq!(demand.coverage(&[]), 0.0);
    }
}
