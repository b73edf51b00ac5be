//! The workload file: dclab.endpoints.base.Workload.to_dict(), checked as
//! Workload.errors checks it, and what these clients refuse (resumption, 0-RTT, cc options).

use serde_json::Value;

const MAX_CONNECTIONS: u64 = 64; // dclab/endpoints/base.py MAX_CONNECTIONS
const MAX_OBJECTS: usize = 10_000; // dclab/endpoints/base.py MAX_OBJECTS
const KEYS: [&str; 9] = [
    "objects",
    "connections",
    "assignment",
    "streams",
    "resumption",
    "zero_rtt",
    "cc_options",
    "ranged",
    "preconnect",
];

pub struct Workload {
    pub objects: Vec<u64>,
    pub connections: usize,
    pub assignment: Vec<usize>, // connection of each object (the default filled in)
    pub sequential: bool,
    pub ranged: bool,
    pub preconnect: bool,
}

fn flag(d: &serde_json::Map<String, Value>, key: &str) -> Result<bool, String> {
    match d.get(key) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(format!("{key}: must be bool (got {v})")),
    }
}

impl Workload {
    /// The workload of a JSON text for `stack`'s client; Err names what is wrong or refused.
    pub fn parse(text: &str, stack: &str) -> Result<Workload, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let Value::Object(d) = v else {
            return Err("must be a JSON object".into());
        };
        let unknown: Vec<&str> = d
            .keys()
            .map(String::as_str)
            .filter(|k| !KEYS.contains(k))
            .collect();
        if !unknown.is_empty() {
            return Err(format!("unknown keys {}", unknown.join(", ")));
        }
        let objects: Vec<u64> = match d.get("objects") {
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| x.as_u64())
                .collect::<Option<_>>()
                .ok_or("objects: sizes must be whole numbers of bytes >= 0")?,
            Some(_) => return Err("objects: must be a list of sizes".into()),
            None => vec![100_000_000], // Workload's default
        };
        if objects.is_empty() || objects.len() > MAX_OBJECTS {
            return Err(format!(
                "objects: must be 1 to {MAX_OBJECTS} (got {})",
                objects.len()
            ));
        }
        let connections = match d.get("connections") {
            None => 1,
            Some(v) => match v.as_u64() {
                Some(n) if (1..=MAX_CONNECTIONS).contains(&n) => n as usize,
                _ => {
                    return Err(format!(
                        "connections: must be 1 to {MAX_CONNECTIONS} (got {v})"
                    ));
                }
            },
        };
        let assignment: Vec<usize> = match d.get("assignment") {
            None | Some(Value::Null) => (0..objects.len()).map(|i| i % connections).collect(),
            Some(Value::Array(a)) => {
                if a.len() != objects.len() {
                    return Err(format!(
                        "assignment: needs one connection per object ({}), got {}",
                        objects.len(),
                        a.len()
                    ));
                }
                a.iter()
                    .map(|x| {
                        x.as_u64()
                            .filter(|&c| c < connections as u64)
                            .map(|c| c as usize)
                    })
                    .collect::<Option<_>>()
                    .ok_or(format!(
                        "assignment: connection numbers must be 0 to {}",
                        connections - 1
                    ))?
            }
            Some(v) => return Err(format!("assignment: must be a list or null (got {v})")),
        };
        let idle: Vec<String> = (0..connections)
            .filter(|c| !assignment.contains(c))
            .take(5)
            .map(|c| c.to_string())
            .collect();
        if !idle.is_empty() {
            return Err(format!(
                "connections: every connection needs an object (none on {})",
                idle.join(", ")
            ));
        }
        let sequential = match d.get("streams") {
            None => false,
            Some(Value::String(s)) if s == "parallel" => false,
            Some(Value::String(s)) if s == "sequential" => true,
            Some(v) => return Err(format!("streams: must be parallel or sequential (got {v})")),
        };
        let ranged = flag(&d, "ranged")?;
        let preconnect = flag(&d, "preconnect")?;
        if ranged && objects.contains(&0) {
            return Err("ranged: every range needs at least 1 byte".into());
        }
        // Not implemented here: refused rather than ignored.
        if flag(&d, "resumption")? {
            return Err(format!(
                "resumption: not implemented by the {} client",
                stack
            ));
        }
        if flag(&d, "zero_rtt")? {
            return Err(format!("zero_rtt: not implemented by the {} client", stack));
        }
        match d.get("cc_options") {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) => {
                let knobs: Vec<&str> = a
                    .iter()
                    .filter_map(Value::as_object)
                    .flat_map(|o| o.keys().map(String::as_str))
                    .collect();
                if a.iter().any(|o| !o.is_object()) {
                    return Err("cc_options: each entry must be an object".into());
                }
                if !knobs.is_empty() {
                    return Err(format!(
                        "cc_options: the {} client accepts none (got {})",
                        stack,
                        knobs.join(", ")
                    ));
                }
            }
            Some(v) => return Err(format!("cc_options: must be a list (got {v})")),
        }
        Ok(Workload {
            objects,
            connections,
            assignment,
            sequential,
            ranged,
            preconnect,
        })
    }

    pub fn total(&self) -> u64 {
        self.objects.iter().sum()
    }

    /// Each object's byte range (first, last), both inclusive, when ranged; None otherwise.
    pub fn byte_ranges(&self) -> Vec<Option<(u64, u64)>> {
        let mut first = 0;
        self.objects
            .iter()
            .map(|&size| {
                let r = (self.ranged && size > 0).then(|| (first, first + size - 1));
                first += size;
                r
            })
            .collect()
    }

    /// The n of object i's GET /<n>: the whole body when ranged.
    pub fn path_size(&self, i: usize) -> u64 {
        if self.ranged {
            self.total()
        } else {
            self.objects[i]
        }
    }

    pub fn objects_of(&self, c: usize) -> Vec<usize> {
        (0..self.objects.len())
            .filter(|&i| self.assignment[i] == c)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_ranges() {
        let w = Workload::parse(
            r#"{"objects": [5, 3], "connections": 2, "ranged": true}"#,
            "test",
        )
        .unwrap();
        assert_eq!(w.assignment, vec![0, 1]);
        assert!(!w.sequential && !w.preconnect);
        assert_eq!(w.byte_ranges(), vec![Some((0, 4)), Some((5, 7))]);
        assert_eq!((w.path_size(0), w.path_size(1)), (8, 8));
        assert_eq!(w.objects_of(1), vec![1]);
        let w = Workload::parse(r#"{"cc_options": [{}], "assignment": null}"#, "test").unwrap();
        assert_eq!(w.objects, vec![100_000_000]);
    }

    #[test]
    fn refusals() {
        for (text, word) in [
            (r#"{"objects": [1], "resumption": true}"#, "resumption"),
            (r#"{"objects": [1], "zero_rtt": true}"#, "zero_rtt"),
            (r#"{"objects": [1], "cc_options": [{"k": "1"}]}"#, "k"),
            (r#"{"objects": [1], "extra": 1}"#, "unknown keys extra"),
            (r#"{"objects": [1, 2], "connections": 3}"#, "none on 2"),
            (r#"{"objects": [1], "connections": 65}"#, "1 to 64"),
            (
                r#"{"objects": [1, 2], "assignment": [0]}"#,
                "one connection per object",
            ),
            (r#"{"objects": [-1]}"#, "whole numbers"),
            (r#"{"objects": [0], "ranged": true}"#, "at least 1 byte"),
            (
                r#"{"objects": [1], "streams": "both"}"#,
                "parallel or sequential",
            ),
            ("[]", "JSON object"),
        ] {
            let e = Workload::parse(text, "test").err().unwrap();
            assert!(e.contains(word), "{text}: {e}");
        }
    }
}
