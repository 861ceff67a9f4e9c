//! The exporter's config keys, shared by the broker and the name server: RocketMQ 5.x's
//! `metricsExporterType` (`DISABLE`, `OTLP_GRPC`, `PROM`, `LOG`), `metricsPromExporterHost`
//! and `metricsPromExporterPort` (default 5557), and `metricsLabel` (extra constant labels,
//! `k1:v1,k2:v2`).

use rocketpy_protocol::config::ConfigValue;

/// Where metrics go (RocketMQ 5.x's `MetricsExporterType`). Only `PROM` exports; the others
/// are accepted so a 5.x config file loads, and `OTLP_GRPC` / `LOG` say they are not served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricsExporterType {
    /// No metrics (the default): nothing is counted on any path.
    #[default]
    Disable,
    /// OpenTelemetry over gRPC (not served here).
    OtlpGrpc,
    /// A Prometheus scrape endpoint.
    Prom,
    /// Metrics to the log (not served here).
    Log,
}

const NAMES: [(&str, MetricsExporterType); 4] = [
    ("DISABLE", MetricsExporterType::Disable),
    ("OTLP_GRPC", MetricsExporterType::OtlpGrpc),
    ("PROM", MetricsExporterType::Prom),
    ("LOG", MetricsExporterType::Log),
];

impl ConfigValue for MetricsExporterType {
    /// The enum's name in any case, or its ordinal: Java's setters take both
    /// (`setMetricsExporterType(int)` / `(String)`).
    fn parse_value(raw: &str) -> Result<Self, String> {
        let raw = raw.trim();
        if let Ok(ordinal) = raw.parse::<usize>() {
            if let Some((_, v)) = NAMES.get(ordinal) {
                return Ok(*v);
            }
        }
        NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(raw))
            .map(|(_, v)| *v)
            .ok_or_else(|| format!("expected DISABLE, OTLP_GRPC, PROM or LOG, not {raw:?}"))
    }

    fn render(&self) -> String {
        NAMES
            .iter()
            .find(|(_, v)| v == self)
            .map_or("DISABLE", |(name, _)| name)
            .to_owned()
    }
}

/// What a server needs to start its exporter.
#[derive(Debug, Clone, Default)]
pub struct ExporterSettings {
    /// `metricsExporterType`.
    pub exporter_type: MetricsExporterType,
    /// `metricsPromExporterHost`; empty means the server's own bind address.
    pub host: String,
    /// `metricsPromExporterPort` (0 picks a free port).
    pub port: u16,
    /// `metricsLabel`: `k1:v1,k2:v2`.
    pub labels: String,
}

impl ExporterSettings {
    /// Whether a Prometheus endpoint is wanted. Other exporter types are logged once.
    pub fn prometheus_enabled(&self) -> bool {
        match self.exporter_type {
            MetricsExporterType::Prom => true,
            MetricsExporterType::Disable => false,
            other => {
                tracing::warn!(
                    exporter = %other.render(),
                    "metricsExporterType not supported here (only PROM): metrics disabled"
                );
                false
            }
        }
    }

    /// The `metricsLabel` pairs; malformed items are skipped with a warning, as the Java
    /// broker ignores what it cannot split.
    pub fn constant_labels(&self) -> Vec<(String, String)> {
        self.labels
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .filter_map(|item| match item.split_once(':') {
                Some((k, v)) if !k.trim().is_empty() => {
                    Some((k.trim().to_owned(), v.trim().to_owned()))
                }
                _ => {
                    tracing::warn!(item, "metricsLabel item is not key:value; ignored");
                    None
                }
            })
            .collect()
    }

    /// A registry whose every metric carries `base` labels (the server's identity) and the
    /// `metricsLabel` pairs.
    pub fn registry(
        &self,
        base: Vec<(&'static str, String)>,
    ) -> prometheus_client::registry::Registry {
        use std::borrow::Cow;
        let labels: Vec<(Cow<'static, str>, Cow<'static, str>)> = base
            .into_iter()
            .map(|(k, v)| (Cow::Borrowed(k), Cow::Owned(v)))
            .chain(
                self.constant_labels()
                    .into_iter()
                    .map(|(k, v)| (Cow::Owned(k), Cow::Owned(v))),
            )
            .collect();
        prometheus_client::registry::Registry::with_labels(labels.into_iter())
    }

    /// The address to listen on: the configured host, else `bind_host`.
    pub fn listen_addr(&self, bind_host: &str) -> String {
        let host = if self.host.trim().is_empty() {
            bind_host
        } else {
            self.host.trim()
        };
        if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{}", self.port)
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exporter_type_parses_names_and_ordinals() {
        let parse = MetricsExporterType::parse_value;
        assert_eq!(parse("PROM"), Ok(MetricsExporterType::Prom));
        assert_eq!(parse(" prom "), Ok(MetricsExporterType::Prom));
        assert_eq!(parse("2"), Ok(MetricsExporterType::Prom));
        assert_eq!(parse("otlp_grpc"), Ok(MetricsExporterType::OtlpGrpc));
        assert_eq!(parse("0"), Ok(MetricsExporterType::Disable));
        assert!(parse("4").is_err());
        assert!(parse("prometheus").is_err());
        assert_eq!(MetricsExporterType::Prom.render(), "PROM");
    }

    #[test]
    fn labels_and_address() {
        let s = ExporterSettings {
            labels: "env:prod, bad ,zone: a".into(),
            port: 5557,
            ..Default::default()
        };
        assert_eq!(
            s.constant_labels(),
            vec![
                ("env".to_owned(), "prod".to_owned()),
                ("zone".to_owned(), "a".to_owned())
            ]
        );
        assert_eq!(s.listen_addr("127.0.0.1"), "127.0.0.1:5557");
        assert_eq!(s.listen_addr("::1"), "[::1]:5557");
    }
}
