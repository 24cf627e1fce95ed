//! The box's config, in TOML (the operator's format, as the simulator's scenarios) or JSON
//! (what the testbed writes, `BOX.json`), told apart by the file's extension: the two
//! directions of the thin link and the per-host extra delays (the schema is in
//! `BOX_CONTRACT.md` and `docs/middlebox.md`). Unknown fields are refused; bad values name
//! their field, the value and what is allowed (and, in TOML, the line).

use crate::link::LinkEmu;
use crate::parse::host_key;
use rustc_hash::FxHashMap;
use serde::Deserialize;
use smallpipe_core::link::{DeliveryTrace, Framing, FramingKind, LossModelConfig, TraceServer};
use smallpipe_core::{Accounted, AnyQdisc, ConfigError, Duration, QdiscConfig, Rng};
use std::sync::Arc;
use std::collections::BTreeMap;
use std::net::IpAddr;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoxConfig {
    pub seed: u64,
    pub a_to_b: DirectionConfig,
    pub b_to_a: DirectionConfig,
    /// Extra one-way delay for packets whose IP source is this host, in either direction.
    #[serde(default)]
    pub extra_delay_ns_by_src: BTreeMap<IpAddr, u64>,
    /// Frames the box can hold at once (queues plus pipes), all directions together.
    #[serde(default = "default_slab_frames")]
    pub slab_frames: u32,
    /// Length of a `queue_states.csv` slice (TAQ flows by state), ns.
    #[serde(default = "default_slice_ns")]
    pub slice_ns: u64,
    /// What the Prometheus endpoint keeps and shows (read at start; a reload keeps it).
    #[serde(default)]
    pub metrics: MetricsConfig,
}

/// How client addresses (side A's, which faces the clients) appear in metric labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientAddresses {
    /// As they are (IPv6 in full).
    #[default]
    Show,
    /// A keyed hash (SipHash, key drawn at each start): stable within a run, not across.
    Hash,
    /// Left out: per-flow series keep the server side only; no per-host series.
    Omit,
}

#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Flows (and, separately, client hosts) tracked one by one per table, at most.
    pub flow_table_capacity: usize,
    /// A flow or host unseen this long leaves the table, s.
    pub flow_idle_timeout_s: u64,
    pub client_addresses: ClientAddresses,
    /// Queue-delay quantiles are over this many last seconds.
    pub delay_window_s: u32,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig { flow_table_capacity: 1024, flow_idle_timeout_s: 60, client_addresses: ClientAddresses::Show, delay_window_s: 10 }
    }
}

impl MetricsConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if !(16..=65_536).contains(&self.flow_table_capacity) {
            return Err(ConfigError::new("metrics.flow_table_capacity", self.flow_table_capacity, "16 to 65536 entries"));
        }
        if !(1..=86_400).contains(&self.flow_idle_timeout_s) {
            return Err(ConfigError::new("metrics.flow_idle_timeout_s", self.flow_idle_timeout_s, "1 to 86400 s"));
        }
        if !(1..=300).contains(&self.delay_window_s) {
            return Err(ConfigError::new("metrics.delay_window_s", self.delay_window_s, "1 to 300 s"));
        }
        Ok(())
    }
}

fn default_slab_frames() -> u32 {
    65_536
}
fn default_slice_ns() -> u64 {
    1_000_000_000
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionConfig {
    /// Rate of the link, bit/s; left out when `trace` sets it (then the trace's capacity,
    /// filled in when the config is read).
    #[serde(default)]
    pub rate_bps: u64,
    pub delay_ns: u64,
    #[serde(default)]
    pub loss: f64,
    #[serde(default)]
    pub queue: QdiscConfig,
    /// A delivery trace in mahimahi's format the link sends by, in place of `rate_bps`
    /// (`docs/links.md`).
    #[serde(default)]
    pub trace: Option<String>,
    /// Bursty loss in place of `loss`.
    #[serde(default)]
    pub loss_model: Option<LossModelConfig>,
    /// Bytes added to each packet's IP length in the rate accounting (may be negative).
    #[serde(default)]
    pub overhead_bytes: i32,
    /// Minimum packet unit of that accounting, bytes.
    #[serde(default)]
    pub mpu_bytes: u32,
    /// "none", "atm" (48 bytes per 53-byte cell) or "ptm" (64b/65b).
    #[serde(default)]
    pub framing: FramingKind,
    /// The trace file, read with the config.
    #[serde(skip)]
    pub delivery_trace: Option<Arc<DeliveryTrace>>,
}

/// The config file's format, told by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Toml,
    Json,
}

impl Format {
    /// `.toml` or `.json`; anything else is refused, naming the path.
    pub fn of_path(path: &str) -> Result<Format, LoadError> {
        match std::path::Path::new(path).extension().and_then(|e| e.to_str()) {
            Some("toml") => Ok(Format::Toml),
            Some("json") => Ok(Format::Json),
            _ => Err(LoadError::Format { path: path.into() }),
        }
    }
}

/// A config that did not load: unreadable, of an unknown format, not TOML/JSON, an unknown
/// field, or a bad value.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {err}")]
    Read { path: String, err: std::io::Error },
    #[error("{path}: the config's format is told by its extension: .toml (TOML) or .json (JSON)")]
    Format { path: String },
    /// Not well-formed TOML/JSON. `line` (1-based) when the parser gives it apart (TOML);
    /// serde_json's `message` ends with it.
    #[error("{path}: {}not {format}: {message}", .line.map_or(String::new(), |l| format!("line {l}: ")))]
    Syntax { path: String, format: &'static str, line: Option<usize>, message: String },
    /// `line` as for `Syntax`.
    #[error("{path}: {}at {field}: {message}", .line.map_or(String::new(), |l| format!("line {l}: ")))]
    Parse { path: String, field: String, line: Option<usize>, message: String },
    #[error("{path}: {}: {} is not allowed (allowed: {})", .err.field, .err.value, .err.allowed)]
    Invalid { path: String, err: ConfigError },
}

impl BoxConfig {
    /// Reads the file at `path`, in the format its extension names.
    pub fn load(path: &str) -> Result<Self, LoadError> {
        let format = Format::of_path(path)?;
        let text = std::fs::read_to_string(path).map_err(|err| LoadError::Read { path: path.into(), err })?;
        Self::parse_as(&text, format, path)
    }

    /// Parses and validates JSON `text`; `origin` names it in errors (the file's path).
    pub fn parse(text: &str, origin: &str) -> Result<Self, LoadError> {
        Self::parse_as(text, Format::Json, origin)
    }

    /// Parses and validates `text` in `format`; `origin` names it in errors.
    pub fn parse_as(text: &str, format: Format, origin: &str) -> Result<Self, LoadError> {
        let parse_error = |field: String, line: Option<usize>, message: String| {
            // serde's path stops at a tagged enum (`a_to_b.queue`): name the knob inside.
            let (field, message) = inside_tagged_table(text, format, &field).unwrap_or((field, message));
            LoadError::Parse { path: origin.into(), field, line, message }
        };
        let mut cfg: BoxConfig = match format {
            Format::Json => {
                let de = &mut serde_json::Deserializer::from_str(text);
                serde_path_to_error::deserialize(de).map_err(|e| {
                    let field = e.path().to_string();
                    let inner = e.into_inner();
                    if inner.is_syntax() || inner.is_eof() {
                        return LoadError::Syntax { path: origin.into(), format: "JSON", line: None, message: inner.to_string() };
                    }
                    parse_error(field, None, inner.to_string())
                })?
            }
            Format::Toml => {
                let de = toml::de::Deserializer::parse(text)
                    .map_err(|e| LoadError::Syntax { path: origin.into(), format: "TOML", line: line_of(text, e.span()),
                                                     message: e.message().trim_end().to_string() })?;
                serde_path_to_error::deserialize(de).map_err(|e| {
                    let field = e.path().to_string();
                    let inner = e.into_inner();
                    parse_error(field, line_of(text, inner.span()), inner.message().to_string())
                })?
            }
        };
        for (name, d) in [("a_to_b", &mut cfg.a_to_b), ("b_to_a", &mut cfg.b_to_a)] {
            d.read_trace().map_err(|err| LoadError::Invalid { path: origin.into(), err: err.within(name) })?;
        }
        // Building the disciplines is their validation (core's `build`): done once here so a
        // bad discipline value is a config error before any socket opens.
        cfg.validate()
            .and_then(|()| cfg.build_links().map(drop))
            .map_err(|err| LoadError::Invalid { path: origin.into(), err })?;
        Ok(cfg)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        for (name, d) in [("a_to_b", &self.a_to_b), ("b_to_a", &self.b_to_a)] {
            d.validate().map_err(|e| e.within(name))?;
        }
        for (host, ns) in &self.extra_delay_ns_by_src {
            if *ns > 10_000_000_000 {
                return Err(ConfigError::new(format!("extra_delay_ns_by_src.{host}"), ns, "0 to 10 s (10000000000 ns)"));
            }
        }
        if !(16..=1 << 22).contains(&self.slab_frames) {
            return Err(ConfigError::new("slab_frames", self.slab_frames, "16 to 4194304 frames"));
        }
        if !(1_000_000..=3_600_000_000_000).contains(&self.slice_ns) {
            return Err(ConfigError::new("slice_ns", self.slice_ns, "1 ms to 1 h in ns"));
        }
        self.metrics.validate()
    }

    /// What the box would do with this config, for `smallpipe-box check`: every value,
    /// defaults filled in, with its unit.
    pub fn describe(&self) -> String {
        let mut s = format!("seed {}\n", self.seed);
        for (name, d) in [("a_to_b (side A to side B: clients to uplink)", &self.a_to_b), ("b_to_a (side B to side A: uplink to clients)", &self.b_to_a)] {
            let mut q = d.queue.clone();
            q.set_link(d.rate_bps, d.delay_ns);
            let queue = serde_json::to_string(&q).unwrap_or_else(|e| format!("? ({e})"));
            s += &format!("{name}:\n  rate {} bit/s ({:.3} Mbit/s){}\n  one-way delay {} ns ({:.3} ms)\n  random loss {}\n  discipline {queue}\n",
                          d.rate_bps, d.rate_bps as f64 / 1e6,
                          d.trace.as_ref().map_or(String::new(), |t| format!(", the capacity of trace {t}")),
                          d.delay_ns, d.delay_ns as f64 / 1e6, d.loss);
            if let Some(m) = &d.loss_model {
                s += &format!("  bursty loss {} (long-run loss rate {:.4})\n",
                              serde_json::to_string(m).unwrap_or_default(), m.stationary_loss());
            }
            if !(d.overhead_bytes, d.mpu_bytes, d.framing).eq(&(0, 0, FramingKind::None)) {
                s += &format!("  wire bytes per packet: IP length {:+} bytes, at least {} bytes, framing {}\n", d.overhead_bytes,
                              d.mpu_bytes, serde_json::to_value(d.framing).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default());
            }
        }
        for (host, ns) in &self.extra_delay_ns_by_src {
            s += &format!("extra delay for packets from {host}: {ns} ns ({:.3} ms)\n", *ns as f64 / 1e6);
        }
        let m = &self.metrics;
        s += &format!("frame slots {}\nslice {} ns\nmetrics: flow and host tables of {} entries each, idle timeout {} s, \
                       client addresses {}, queue-delay quantiles over {} s\n",
                      self.slab_frames, self.slice_ns, m.flow_table_capacity, m.flow_idle_timeout_s,
                      serde_json::to_value(m.client_addresses).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
                      m.delay_window_s);
        s
    }

    /// The per-source extra delays as the link model keys them.
    pub fn extra_delays(&self) -> FxHashMap<u32, Duration> {
        self.extra_delay_ns_by_src.iter().map(|(ip, ns)| (host_key(*ip), Duration(*ns))).collect()
    }

    /// Both directions' link models, disciplines built by core (`set_link`, then `build`).
    pub fn build_links(&self) -> Result<[LinkEmu; 2], ConfigError> {
        let a = self.a_to_b.build(self.seed, 0, self.extra_delays()).map_err(|e| e.within("a_to_b"))?;
        let b = self.b_to_a.build(self.seed, 1, self.extra_delays()).map_err(|e| e.within("b_to_a"))?;
        Ok([a, b])
    }
}

impl DirectionConfig {
    /// Reads the `trace` file, if any, and sets `rate_bps` to its capacity; a rate set by
    /// hand beside a trace is refused.
    fn read_trace(&mut self) -> Result<(), ConfigError> {
        let Some(path) = &self.trace else { return Ok(()) };
        let trace = DeliveryTrace::load("trace", path)?;
        let capacity_bps = trace.mean_rate_bps().round() as u64;
        if self.rate_bps != 0 {
            return Err(ConfigError::new("rate_bps", self.rate_bps,
                format!("left out when trace is set: the trace sets the rate (its capacity, {capacity_bps} bit/s)")));
        }
        self.rate_bps = capacity_bps;
        self.delivery_trace = Some(Arc::new(trace));
        Ok(())
    }

    /// The per-packet wire accounting.
    pub fn wire_framing(&self) -> Result<Framing, ConfigError> {
        Framing::new(self.overhead_bytes, self.mpu_bytes, self.framing)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        // 1 kbit/s to 100 Gbit/s: the speed test runs "unlimited" as 100 Gbit/s.
        if !(1_000..=100_000_000_000).contains(&self.rate_bps) {
            let allowed = if self.trace.is_some() { "a trace of 1000 to 100000000000 bit/s" } else { "1000 to 100000000000 bit/s, or a trace" };
            return Err(ConfigError::new("rate_bps", self.rate_bps, allowed));
        }
        if let Some(m) = &self.loss_model {
            m.build().map_err(|e| e.within("loss_model"))?;
            if self.loss != 0.0 {
                return Err(ConfigError::new("loss", self.loss, "0 (left out) when loss_model is set: one loss model per direction"));
            }
        }
        self.wire_framing()?;
        if self.delay_ns > 10_000_000_000 {
            return Err(ConfigError::new("delay_ns", self.delay_ns, "0 to 10 s (10000000000 ns)"));
        }
        if !(0.0..1.0).contains(&self.loss) {
            return Err(ConfigError::new("loss", self.loss, "a probability in [0, 1)"));
        }
        Ok(())
    }

    /// The discipline, sized for this direction's link (core's `set_link`, then `build`).
    pub fn build_queue(&self) -> Result<AnyQdisc, ConfigError> {
        let mut q = self.queue.clone();
        q.set_link(self.rate_bps, self.delay_ns);
        q.build().map_err(|e| e.within("queue"))
    }

    fn build(&self, seed: u64, direction: u64, extra: FxHashMap<u32, Duration>) -> Result<LinkEmu, ConfigError> {
        let qdisc = self.build_queue()?;
        // Streams 0/1 for the disciplines, 2/3 for the links' loss draws.
        let queue = Accounted::new(qdisc, Rng::new(seed, direction)).with_delay_histogram();
        let mut link = LinkEmu::new(self.rate_bps, Duration(self.delay_ns), self.loss, extra, queue, Rng::new(seed, 2 + direction));
        link.shape(self.delivery_trace.clone().map(TraceServer::new), self.wire_framing()?, self.burst_loss()?);
        Ok(link)
    }

    /// The bursty-loss model, in its Good state.
    pub fn burst_loss(&self) -> Result<Option<smallpipe_core::link::GilbertElliott>, ConfigError> {
        self.loss_model.map(|m| m.build()).transpose().map_err(|e| e.within("loss_model"))
    }
}

/// The 1-based line of byte offset `span.start` in `text`.
fn line_of(text: &str, span: Option<std::ops::Range<usize>>) -> Option<usize> {
    span.map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
}

/// For an error serde places at a direction's `queue` or `loss_model` table (its path stops
/// at the tagged enum), the knob inside that table and the error there: the knobs are parsed
/// again as their `kind`'s own (core's `QdiscConfig::locate_error`,
/// `LossModelConfig::locate_error`); when they parse, or the kind is unknown or missing, the
/// error is the `kind`'s. `None` for any other field.
fn inside_tagged_table(text: &str, format: Format, field: &str) -> Option<(String, String)> {
    let (direction, table) = field.split_once('.')?;
    /// The table's knobs' error (path, message), and the error of the table's `kind` alone.
    type Locate = fn(&str, serde_json::Value) -> Option<(String, String)>;
    type KindError = fn(serde_json::Value) -> Option<String>;
    let (locate, parse_kind): (Locate, KindError) =
        match (direction, table) {
            ("a_to_b" | "b_to_a", "queue") => (
                |k, v| QdiscConfig::locate_error(k, v),
                |v| serde_json::from_value::<QdiscConfig>(v).err().map(|e| e.to_string()),
            ),
            ("a_to_b" | "b_to_a", "loss_model") => (
                |k, v| LossModelConfig::locate_error(k, v),
                |v| serde_json::from_value::<LossModelConfig>(v).err().map(|e| e.to_string()),
            ),
            _ => return None,
        };
    let doc: serde_json::Value = match format {
        Format::Json => serde_json::from_str(text).ok()?,
        Format::Toml => toml::from_str(text).ok()?,
    };
    let mut knobs = doc.get(direction)?.get(table)?.as_object()?.clone();
    let kind = knobs.remove("kind");
    match kind.as_ref().and_then(|k| k.as_str()).and_then(|k| locate(k, serde_json::Value::Object(knobs))) {
        Some((inner, message)) if inner != "." => Some((format!("{field}.{inner}"), message)),
        Some((_, message)) => Some((field.to_string(), message)),
        None => {
            let message = match kind {
                None => "missing field `kind`".to_string(),
                // A known kind whose knobs parse: the error is not the kind's.
                Some(k) => parse_kind(serde_json::json!({"kind": k})).filter(|m| !m.starts_with("missing field"))?,
            };
            Some((format!("{field}.kind"), message))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_str(text: &str) -> Result<BoxConfig, LoadError> {
        BoxConfig::parse(text, "box.json")
    }

    const OK: &str = r#"{"seed": 1,
        "a_to_b": {"rate_bps": 1000000, "delay_ns": 100000000, "queue": {"kind": "taq"}},
        "b_to_a": {"rate_bps": 1000000, "delay_ns": 100000000, "loss": 0.01},
        "extra_delay_ns_by_src": {"198.18.1.7": 40000000}}"#;

    #[test]
    fn the_contract_example_loads_and_builds() {
        let c = load_str(OK).unwrap();
        assert_eq!(c.extra_delays()[&0xc612_0107], Duration(40_000_000));
        assert!(matches!(c.a_to_b.queue, QdiscConfig::Taq(_)));
        c.build_links().unwrap();
    }

    #[test]
    fn cake_is_sized_from_its_directions_rate() {
        // The box hands CAKE its direction's rate, so the tins' thresholds are fractions of
        // it (docs/cake.md): 9 Mbit/s up → Voice 2.25 Mbit/s, Bulk 562.5 kbit/s.
        let c = load_str(&OK.replace("{\"kind\": \"taq\"}", "{\"kind\": \"cake\", \"ack_filter\": \"on\"}")
            .replace("\"rate_bps\": 1000000, \"delay_ns\": 100000000, \"queue\"", "\"rate_bps\": 9000000, \"delay_ns\": 100000000, \"queue\""))
            .unwrap();
        let AnyQdisc::Cake(q) = c.a_to_b.build_queue().unwrap() else { panic!("not cake") };
        let rates: Vec<u64> = q.tins().iter().map(|t| t.threshold_rate_bps).collect();
        assert_eq!(rates, [9_000_000, 562_496, 2_250_000]);
        let e = load_str(&OK.replace("{\"kind\": \"taq\"}", "{\"kind\": \"cake\", \"ack_filter\": \"sometimes\"}"))
            .unwrap_err()
            .to_string();
        // The knob inside the tagged `queue` table, the value and the allowed ones are named.
        assert!(e.contains("at a_to_b.queue.ack_filter:") && e.contains("sometimes") && e.contains("aggressive"), "{e}");
    }

    /// A bad value of an enum knob names the knob's full path, whether the enum is the
    /// queue's tag, a knob inside the tagged queue table, or a plain field.
    #[test]
    fn a_bad_enum_value_names_the_full_knob_path() {
        let cases = [
            (OK.replace("{\"kind\": \"taq\"}", "{\"kind\": \"fq_codle\"}"), "at a_to_b.queue.kind:", "fq_codle", "fq_codel"),
            (OK.replace("{\"kind\": \"taq\"}", "{\"kind\": 7}"), "at a_to_b.queue.kind:", "7", "variant"),
            (OK.replace("{\"kind\": \"taq\"}", "{\"limit_pkts\": 7}"), "at a_to_b.queue.kind:", "kind", "missing"),
            (OK.replace("{\"kind\": \"taq\"}", "{\"kind\": \"cake\", \"flow_mode\": \"triple\"}"), "at a_to_b.queue.flow_mode:",
             "triple", "triple_isolate"),
            (OK.replace("{\"kind\": \"taq\"}", "{\"kind\": \"taq\", \"fairness\": \"host\"}"), "at a_to_b.queue.fairness:", "host",
             "pool"),
            (OK.replace("{\"kind\": \"taq\"}", "{\"kind\": \"taq\", \"protect_pure_acks\": \"yes\"}"),
             "at a_to_b.queue.protect_pure_acks:", "yes", "boolean"),
            (OK.replace("\"loss\": 0.01", "\"loss\": 0.01, \"framing\": \"atx\""), "at b_to_a.framing:", "atx", "ptm"),
            (OK.replace("\"seed\": 1,", "\"seed\": 1, \"metrics\": {\"client_addresses\": \"mask\"},"), "at metrics.client_addresses:",
             "mask", "omit"),
            (OK.replace("\"loss\": 0.01", "\"loss_model\": {\"kind\": \"gilbert_elliott\", \"p\": \"x\", \"r\": 0.1}"),
             "at b_to_a.loss_model.p:", "\"x\"", "f64"),
            (OK.replace("\"loss\": 0.01", "\"loss_model\": {\"kind\": \"bernoulli\", \"p\": 0.1}"), "at b_to_a.loss_model.kind:",
             "bernoulli", "gilbert_elliott"),
        ];
        for (json, field, value, allowed) in cases {
            let e = load_str(&json).unwrap_err().to_string();
            assert!(e.contains(field) && e.contains(value) && e.contains(allowed), "{field}: {e}");
        }
    }

    const PACKAGED_TOML: &str = include_str!("../packaging/uplink.toml");

    /// The packaged config written in JSON: every key of `packaging/uplink.toml`.
    const PACKAGED_AS_JSON: &str = r#"{"seed": 1, "slab_frames": 65536, "slice_ns": 1000000000,
        "a_to_b": {"rate_bps": 9000000, "delay_ns": 0, "loss": 0.0, "overhead_bytes": 0, "mpu_bytes": 0, "framing": "none",
                   "queue": {"kind": "fq_codel"}},
        "b_to_a": {"rate_bps": 45000000, "delay_ns": 0, "loss": 0.0, "overhead_bytes": 0, "mpu_bytes": 0, "framing": "none",
                   "queue": {"kind": "fq_codel"}},
        "metrics": {"flow_table_capacity": 1024, "flow_idle_timeout_s": 60, "client_addresses": "hash", "delay_window_s": 10}}"#;

    fn toml_str(text: &str) -> Result<BoxConfig, LoadError> {
        BoxConfig::parse_as(text, Format::Toml, "uplink.toml")
    }

    #[test]
    fn the_packaged_toml_loads_and_equals_its_json() {
        let toml = toml_str(PACKAGED_TOML).unwrap();
        assert_eq!(toml, load_str(PACKAGED_AS_JSON).unwrap());
        // FQ-CoDel both ways at 9 / 45 Mbit/s, client addresses hashed: what the man page
        // and docs/operator.md say the package installs.
        assert!(matches!(toml.a_to_b.queue, QdiscConfig::FqCodel(_)) && matches!(toml.b_to_a.queue, QdiscConfig::FqCodel(_)));
        assert_eq!((toml.a_to_b.rate_bps, toml.b_to_a.rate_bps, toml.metrics.client_addresses), (9_000_000, 45_000_000, ClientAddresses::Hash));
        toml.build_links().unwrap();
    }

    /// The commented TAQ lines of the packaged file, uncommented, give TAQ with its pure
    /// ACKs protected (issue 41: they were its first victims), sparse packets first and
    /// NewFlow capped against level 3 (docs/operator.md), in both directions.
    #[test]
    fn the_packaged_taq_example_protects_pure_acks() {
        let mut text = String::new();
        for line in PACKAGED_TOML.lines() {
            match line {
                "kind = \"fq_codel\"" => {}
                "# kind = \"taq\"" | "# protect_pure_acks = true" | "# sparse_share = 0.25" | "# new_flow_cap_level_3 = true" => {
                    text += &line[2..]
                }
                _ => text += line,
            }
            text.push('\n');
        }
        let c = toml_str(&text).unwrap();
        for q in [&c.a_to_b.queue, &c.b_to_a.queue] {
            let QdiscConfig::Taq(t) = q else { panic!("not TAQ: {q:?}") };
            assert!(t.protect_pure_acks && t.sparse_share == 0.25 && t.new_flow_cap_level_3);
        }
    }

    #[test]
    fn toml_errors_name_the_line_the_field_the_value_and_what_is_allowed() {
        let line_of_key = |text: &str, key: &str| text.lines().position(|l| l.starts_with(key)).unwrap() + 1;
        // A type error inside a table: serde's value and expectation, with its line.
        let text = PACKAGED_TOML.replace("rate_bps = 45_000_000", "rate_bps = \"45M\"");
        let e = toml_str(&text).unwrap_err().to_string();
        let line = line_of_key(&text, "rate_bps = \"45M\"");
        assert!(e.contains(&format!("uplink.toml: line {line}: at b_to_a.rate_bps:")) && e.contains("45M") && e.contains("u64"), "{e}");
        // A range error: field, value and the range.
        let e = toml_str(&PACKAGED_TOML.replacen("loss = 0.0", "loss = 1.5", 1)).unwrap_err().to_string();
        assert!(e.contains("uplink.toml: a_to_b.loss: 1.5 is not allowed (allowed: a probability in [0, 1))"), "{e}");
        let e = toml_str(&PACKAGED_TOML.replace("delay_window_s = 10", "delay_window_s = 0")).unwrap_err().to_string();
        assert!(e.contains("metrics.delay_window_s: 0 is not allowed (allowed: 1 to 300 s)"), "{e}");
        // An enum knob inside the tagged queue table, named by its full path and line.
        let text = PACKAGED_TOML.replacen("kind = \"fq_codel\"", "kind = \"cake\"\nack_filter = \"sometimes\"", 1);
        let e = toml_str(&text).unwrap_err().to_string();
        assert!(e.contains("at a_to_b.queue.ack_filter:") && e.contains("sometimes") && e.contains("aggressive"), "{e}");
        let e = toml_str(&PACKAGED_TOML.replacen("kind = \"fq_codel\"", "kind = \"fq_codle\"", 1)).unwrap_err().to_string();
        assert!(e.contains("at a_to_b.queue.kind:") && e.contains("fq_codle") && e.contains("`fq_codel`"), "{e}");
        let e = toml_str(&PACKAGED_TOML.replace("framing = \"none\"\n# A mahimahi", "framing = \"adsl\"\n# A mahimahi"))
            .unwrap_err().to_string();
        assert!(e.contains("at a_to_b.framing:") && e.contains("adsl") && e.contains("`atm`"), "{e}");
        // Not TOML at all: the line of the fault.
        let e = toml_str("seed = 1\n[a_to_b\n").unwrap_err().to_string();
        assert!(e.contains("uplink.toml: line 2: not TOML:"), "{e}");
        let e = load_str("{\"seed\": 1,\n").unwrap_err().to_string();
        assert!(e.contains("box.json: not JSON:") && e.contains("line 2"), "{e}");
    }

    #[test]
    fn an_unknown_toml_key_is_refused_naming_it() {
        let text = PACKAGED_TOML.replacen("mpu_bytes = 0", "mpu_bytes = 0\nmtu_bytes = 9000", 1);
        let e = toml_str(&text).unwrap_err().to_string();
        assert!(e.contains("a_to_b") && e.contains("unknown field `mtu_bytes`"), "{e}");
        let e = toml_str(&PACKAGED_TOML.replace("[metrics]", "[metric]")).unwrap_err().to_string();
        assert!(e.contains("unknown field `metric`"), "{e}");
        let e = toml_str(&PACKAGED_TOML.replacen("kind = \"fq_codel\"", "kind = \"fq_codel\"\nbogus = 1", 1)).unwrap_err().to_string();
        assert!(e.contains("at a_to_b.queue.bogus:") && e.contains("unknown field `bogus`"), "{e}");
    }

    #[test]
    fn the_format_follows_the_extension() {
        let dir = std::env::temp_dir().join(format!("smallpipe-box-format-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (toml, json, other) = (dir.join("uplink.toml"), dir.join("uplink.json"), dir.join("uplink.conf"));
        std::fs::write(&toml, PACKAGED_TOML).unwrap();
        std::fs::write(&json, PACKAGED_AS_JSON).unwrap();
        std::fs::write(&other, PACKAGED_TOML).unwrap();
        let load = |p: &std::path::Path| BoxConfig::load(p.to_str().unwrap());
        assert_eq!(load(&toml).unwrap(), load(&json).unwrap());
        let e = load(&other).unwrap_err().to_string();
        assert!(e.contains("uplink.conf") && e.contains(".toml (TOML) or .json (JSON)"), "{e}");
        // TOML text under a .json name is read as JSON, and refused as such.
        std::fs::write(&json, PACKAGED_TOML).unwrap();
        assert!(matches!(load(&json), Err(LoadError::Syntax { format: "JSON", .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unknown_field_is_named() {
        let e = load_str(&OK.replace("\"loss\"", "\"los\"")).unwrap_err().to_string();
        assert!(e.contains("b_to_a") && e.contains("los"), "{e}");
    }

    #[test]
    fn a_bad_value_names_field_value_and_range() {
        let e = load_str(&OK.replace("\"loss\": 0.01", "\"loss\": 1.5")).unwrap_err().to_string();
        assert!(e.contains("b_to_a.loss") && e.contains("1.5") && e.contains("[0, 1)"), "{e}");
        let e = load_str(&OK.replace("{\"kind\": \"taq\"}", "{\"kind\": \"taq\", \"limit_pkts\": 0}")).unwrap_err().to_string();
        assert!(e.contains("a_to_b.queue.limit_pkts"), "{e}");
    }

    #[test]
    fn check_describes_every_value_with_defaults_filled_in() {
        let d = load_str(OK).unwrap().describe();
        for want in ["rate 1000000 bit/s (1.000 Mbit/s)", "one-way delay 100000000 ns (100.000 ms)", "random loss 0.01",
                     "\"kind\":\"taq\"", "extra delay for packets from 198.18.1.7: 40000000 ns", "frame slots 65536",
                     "client addresses show", "over 10 s"] {
            assert!(d.contains(want), "{want:?} missing in:\n{d}");
        }
    }

    #[test]
    fn a_trace_sets_the_rate_and_bad_link_models_are_named() {
        let dir = std::env::temp_dir().join(format!("smallpipe-box-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (ok, bad) = (dir.join("ok.trace"), dir.join("bad.trace"));
        std::fs::write(&ok, "5\n10\n").unwrap();
        std::fs::write(&bad, "5\n10\n7\n").unwrap();
        let with = |b_to_a: &str| {
            load_str(&OK.replace(r#""b_to_a": {"rate_bps": 1000000, "delay_ns": 100000000, "loss": 0.01}"#, &format!(r#""b_to_a": {b_to_a}"#)))
        };
        // Two 1500-byte opportunities every 10 ms: 2.4 Mbit/s.
        let c = with(&format!(r#"{{"trace": {ok:?}, "delay_ns": 0, "framing": "atm", "overhead_bytes": 10,
                                  "loss_model": {{"kind": "gilbert_elliott", "p": 0.01, "r": 0.5}}}}"#)).unwrap();
        assert_eq!(c.b_to_a.rate_bps, 2_400_000);
        c.build_links().unwrap();
        let d = c.describe();
        assert!(d.contains("the capacity of trace") && d.contains("framing atm") && d.contains("bursty loss"), "{d}");
        let e = with(&format!(r#"{{"trace": {ok:?}, "rate_bps": 1000000, "delay_ns": 0}}"#)).unwrap_err().to_string();
        assert!(e.contains("b_to_a.rate_bps") && e.contains("2400000"), "{e}");
        let e = with(&format!(r#"{{"trace": {bad:?}, "delay_ns": 0}}"#)).unwrap_err().to_string();
        assert!(e.contains("b_to_a.trace") && e.contains("line 3") && e.contains("never decrease"), "{e}");
        let e = with(r#"{"delay_ns": 0}"#).unwrap_err().to_string();
        assert!(e.contains("b_to_a.rate_bps") && e.contains("or a trace"), "{e}");
        let ge = r#""loss_model": {"kind": "gilbert_elliott", "p": 0.01, "r": 0.5}"#;
        let e = with(&format!(r#"{{"rate_bps": 1000000, "delay_ns": 0, "loss": 0.1, {ge}}}"#)).unwrap_err().to_string();
        assert!(e.contains("b_to_a.loss:"), "{e}");
        let e = with(&format!(r#"{{"rate_bps": 1000000, "delay_ns": 0, {}}}"#, ge.replace("0.5", "1.5"))).unwrap_err().to_string();
        assert!(e.contains("b_to_a.loss_model.r") && e.contains("1.5"), "{e}");
        let e = with(r#"{"rate_bps": 1000000, "delay_ns": 0, "mpu_bytes": 9000}"#).unwrap_err().to_string();
        assert!(e.contains("b_to_a.mpu_bytes") && e.contains("9000"), "{e}");
    }

    #[test]
    fn metrics_settings_default_and_bad_ones_are_named() {
        assert_eq!(load_str(OK).unwrap().metrics, MetricsConfig::default());
        let with = |m: &str| load_str(&OK.replace("\"seed\": 1,", &format!("\"seed\": 1, \"metrics\": {m},")));
        let c = with(r#"{"client_addresses": "hash", "flow_table_capacity": 100}"#).unwrap();
        assert_eq!((c.metrics.client_addresses, c.metrics.flow_table_capacity, c.metrics.delay_window_s), (ClientAddresses::Hash, 100, 10));
        let e = with(r#"{"flow_table_capacity": 3}"#).unwrap_err().to_string();
        assert!(e.contains("metrics.flow_table_capacity") && e.contains(" 3 ") && e.contains("16 to 65536"), "{e}");
        let e = with(r#"{"client_addresses": "mask"}"#).unwrap_err().to_string();
        assert!(e.contains("metrics.client_addresses") && e.contains("mask") && e.contains("hash"), "{e}");
    }
}
