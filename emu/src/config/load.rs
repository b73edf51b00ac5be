//! Reading a scenario: file to text, text to [`ScenarioFile`] (serde, errors carry the
//! field path), then [`validate`] to the [`Scenario`].

use std::path::Path;

use anyhow::{Context, Result};

use super::model::Scenario;
use super::schema::ScenarioFile;
use super::validate::{validate, FieldError};

/// Reads, parses and validates a scenario file. Relative trace paths are resolved against
/// the file's directory.
pub fn load(path: &Path) -> Result<Scenario> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read scenario file {}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse(&text, base).with_context(|| format!("invalid scenario {}", path.display()))
}

/// Parses and validates scenario text; `base` resolves relative trace paths.
pub fn parse(text: &str, base: &Path) -> Result<Scenario> {
    let de = toml::Deserializer::new(text);
    let file: ScenarioFile = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let msg = inner.message().to_string();
        let field = if path == "." {
            "scenario".to_string()
        } else {
            path
        };
        anyhow::Error::from(FieldError { field, msg })
    })?;
    validate(file, base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{default_toml, ChangeKind};
    use crate::link::{DelayDist, RateSpec};

    fn err(text: &str) -> String {
        format!("{:#}", parse(text, Path::new(".")).unwrap_err())
    }

    #[test]
    fn empty_file_is_the_reference_testbed() {
        let s = parse("", Path::new(".")).unwrap();
        assert_eq!(s.legs.len(), 2);
        assert!(matches!(
            s.legs[0].downlink.rate,
            RateSpec::Fixed { bps: 20_000_000 }
        ));
        assert_eq!(s.legs[0].downlink.queue_packets, Some(100));
        assert_eq!(s.legs[0].downlink.delay_limit, Some(10_000));
        assert!(
            matches!(s.legs[0].downlink.delay, DelayDist::Normal { mean_ms, std_ms } if mean_ms == 10.0 && std_ms == 1.0)
        );
        assert!(s.legs[0].uplink.is_some() && s.legs[1].uplink.is_none());
        assert_eq!(
            s.legs[0].uplink.as_ref().unwrap().queue_packets,
            Some(10_000)
        );
        assert_eq!(s.pdcp.sn_bits, 16);
        assert_eq!(s.pdcp.header_bytes, 2);
        assert_eq!(
            s.pdcp.t_reordering,
            Some(200 * crate::base::time::NS_PER_MS)
        );
        assert_eq!(s.bearers.len(), 1);
        assert_eq!(s.bearers[0].legs, vec![0, 1]);
        assert_eq!(s.bearers[0].uplink_leg, Some(0));
        assert_eq!(s.bearers[0].split.batch, 100);
        assert_eq!(s.stats_interval, 100 * crate::base::time::NS_PER_MS);
    }

    #[test]
    fn default_toml_round_trips() {
        let text = default_toml();
        let s = parse(&text, Path::new(".")).unwrap();
        assert_eq!(s.legs.len(), 2);
    }

    #[test]
    fn errors_name_the_field_and_range() {
        assert!(err("[pdcp]\nsn_bits = 15").contains("pdcp.sn_bits: must be 12, 16 or 18 (got 15)"));
        assert!(
            err("[[legs]]\nname='a'\n[legs.downlink]\nqueue_packets = 0")
                .contains("legs[0].downlink.queue_packets: must be between 1")
        );
        assert!(err("[[legs]]\nname='a'\n[legs.downlink]\nrate = 'fast'")
            .contains("legs[0].downlink.rate"));
        assert!(err("[topology]\nserver_addr = '10.0.0.1'")
            .contains("topology.server_addr: must be in 198.18.0.0/15"));
        assert!(err("[pdcp]\nsn_bits = 'x'").contains("pdcp.sn_bits"));
        assert!(err("[pdcp]\nbogus = 1").contains("unknown field `bogus`"));
        assert!(err("[split]\nratio = [1, 1, 1]")
            .contains("split.ratio: needs one share per leg of the bearer (2), got 3"));
        assert!(
            err("[[legs]]\nname='a'\n[legs.downlink.loss]\nmodel='bernoulli'\npercent=120")
                .contains("legs[0].downlink.loss.percent: must be between 0 and 100")
        );
        assert!(
            err("[[bearers]]\nname='x'\nmode='sc'\nlegs=['leg1','leg2']")
                .contains("bearers[0].legs: an sc bearer takes exactly 1 leg")
        );
        assert!(err("[[bearers]]\nname='x'\nmode='sc'\nlegs=['leg9']")
            .contains("bearers[0].legs[0]: no leg named \"leg9\""));
        assert!(err("[[schedule]]\nat_ms = 10").contains("schedule[0]: changes nothing"));
        assert!(
            err("[[legs]]\nname='a'\n[legs.downlink.trace]\npath='/nonexistent.csv'")
                .contains("legs[0].downlink.trace.path")
        );
    }

    #[test]
    fn bearers_rules_and_schedule() {
        let s = parse(
            r#"
            [[bearers]]
            name = "dc"
            mode = "dc"
            match = [{ protocol = "udp", server_port = 4433 }]
            [[bearers]]
            name = "sc1"
            mode = "sc"
            legs = ["leg1"]
            match = [{ server_port = "8000-8001", client_addr = "198.18.0.0/15" }]
            [[schedule]]
            at_ms = 2000
            leg = "leg2"
            rate = "5mbit"
            [[schedule]]
            at_ms = 1000
            split = { ratio = [9, 1] }
            "#,
            Path::new("."),
        )
        .unwrap();
        assert_eq!(s.bearers[0].rules[0].protocol, Some(17));
        assert_eq!(s.bearers[0].rules[0].server_ports, Some((4433, 4433)));
        assert_eq!(s.bearers[1].rules[0].server_ports, Some((8000, 8001)));
        assert_eq!(
            s.bearers[1].rules[0].client_net,
            Some((0xC612_0000, 0xFFFE_0000))
        );
        assert_eq!(s.schedule.len(), 2);
        assert_eq!(s.schedule[0].at, crate::base::time::NS_PER_S);
        assert!(matches!(
            s.schedule[1].what,
            ChangeKind::Rate {
                leg: 1,
                uplink: false,
                rate: RateSpec::Fixed { bps: 5_000_000 }
            }
        ));
    }

    #[test]
    fn infinite_t_reordering() {
        let s = parse("[pdcp]\nt_reordering_ms = 'inf'", Path::new(".")).unwrap();
        assert_eq!(s.pdcp.t_reordering, None);
    }
}
