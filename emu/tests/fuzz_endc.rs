//! The fuzz pass of `bad_input.rs` over what EN-DC added: NR carriers (numerology, MCS
//! table, layers, symbols, TDD), HARQ and RLC, blockage, the X2 hop, flow-controlled
//! split policies with their hold and outage fallback, and secondary node events. Every
//! random scenario is refused in one line or runs in virtual time; the whole pass runs
//! under an address-space limit, in a binary of its own so that the limit binds no other
//! test.

mod fuzz;

use std::path::Path;

use fuzz::{fill, parse_or_refuse, pick, runner, slot_value};
use nix::sys::resource::{setrlimit, Resource};
use proptest::prelude::*;

const ENDC: &str = r#"
seed = @0@
[pdcp]
reordering = true
t_reordering_ms = @1@
processing_ms = @2@
[split]
policy = @3@
period_ms = @4@
target_delay_ms = @5@
min_bytes = @6@
hold_bytes = @7@
discard_ms = @8@
fallback_ms = @9@
[[legs]]
name = "lte"
[legs.downlink]
delay = { distribution = "constant", ms = @10@ }
[legs.downlink.cell]
bandwidth_mhz = @11@
scheduler = @12@
[legs.downlink.cell.harq]
bler = @13@
rtt_slots = @14@
max_tx = @15@
[legs.downlink.cell.rlc]
mode = @16@
t_reassembly_ms = @17@
max_retx = @18@
[[legs.downlink.cell.devices]]
mean_sinr_db = @19@
fading = "none"
queue_bytes = @20@
[legs.uplink]
rate = "unlimited"
[[legs]]
name = "nr"
[legs.downlink]
delay = { distribution = "constant", ms = @21@ }
[legs.downlink.cell]
rat = @22@
bandwidth_mhz = @23@
scheduler = "pf"
[legs.downlink.cell.nr]
numerology = @24@
mcs_table = @25@
layers = @26@
pdsch_symbols = @27@
special_pdsch_symbols = @28@
dmrs_re = @29@
overhead_re = @30@
tdd = @31@
[[legs.downlink.cell.devices]]
mean_sinr_db = @32@
doppler_hz = @33@
fading = @34@
queue_bytes = @35@
blockage = { periods = [[@36@, @37@]], loss_db = @38@ }
[[legs.downlink.cell.devices]]
mean_sinr_db = 20
fading = "none"
blockage = { mean_clear_ms = @39@, mean_blocked_ms = @40@ }
[legs.x2]
rate = @41@
delay = { distribution = "constant", ms = @42@ }
[[bearers]]
name = "dc"
mode = "dc"
legs = ["lte", "nr"]
[[bearers]]
name = "nr-only"
mode = "sc"
legs = ["nr"]
match = [{ protocol = "udp", server_port = 9000 }]
[[schedule]]
at_ms = @43@
leg = "nr"
secondary = { event = @44@, interruption_ms = @45@, buffered = @46@ }
[[schedule]]
at_ms = @47@
leg = "nr"
secondary = { event = @48@ }
"#;

/// Slots in [`ENDC`].
const SLOTS: usize = 49;

/// Valid values for the slots of [`ENDC`], in order.
const DEFAULTS: [&str; SLOTS] = [
    "7",
    "100",
    "0.5",
    "'delay-target'",
    "10",
    "10",
    "15000",
    "4000000",
    "100",
    "5",
    "10",
    "20",
    "'rr'",
    "0.1",
    "8",
    "4",
    "'am'",
    "35",
    "4",
    "25",
    "1000000",
    "5",
    "'nr'",
    "40",
    "1",
    "'qam256'",
    "2",
    "12",
    "8",
    "12",
    "0",
    "'DDDSU'",
    "30",
    "5",
    "'rayleigh'",
    "3000000",
    "0.5",
    "0.3",
    "40",
    "400",
    "100",
    "'1gbit'",
    "5",
    "1500",
    "'release'",
    "50",
    "'forward'",
    "2500",
    "'add'",
];

/// Slots of [`ENDC`] that hold strings.
fn is_text_slot(i: usize) -> bool {
    DEFAULTS[i].starts_with('\'')
}

/// The limit on the pass's address space: far above what a valid scenario here needs (the
/// pass peaks near 100 MB), far below what a parser or engine that grew without bound
/// would take.
const ADDRESS_SPACE: u64 = 2 << 30;

#[test]
fn random_values_in_the_endc_and_nr_fields_are_refused_or_run() {
    setrlimit(Resource::RLIMIT_AS, ADDRESS_SPACE, ADDRESS_SPACE).unwrap();
    assert!(
        Vec::<u8>::new()
            .try_reserve(ADDRESS_SPACE as usize)
            .is_err(),
        "the limit binds"
    );
    // The template is valid as it stands.
    let ok = fill(ENDC, &|i| DEFAULTS[i].to_string());
    dcemu::config::parse(&ok, Path::new(".")).unwrap();
    assert!(parse_or_refuse(&ok).unwrap());

    let slots = prop_oneof![
        3 => proptest::collection::vec(proptest::option::weighted(0.04, slot_value()), SLOTS),
        1 => proptest::collection::vec(proptest::option::weighted(0.2, slot_value()), SLOTS),
    ];
    let accepted = std::cell::Cell::new(0);
    runner(1024)
        .run(&slots, |slots| {
            let text = fill(ENDC, &|i| {
                slots[i].as_ref().map_or_else(
                    || DEFAULTS[i].to_string(),
                    |v| pick(is_text_slot(i), DEFAULTS[i], v),
                )
            });
            if parse_or_refuse(&text)? {
                accepted.set(accepted.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    eprintln!("{} of 1024 random EN-DC scenarios valid", accepted.get());
    assert!(
        accepted.get() > 100,
        "too few random scenarios were valid: the engine went untested"
    );
}
