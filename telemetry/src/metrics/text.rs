//! `/metrics`: what the OpenTelemetry SDK collected, written in the OpenMetrics text format by
//! `prometheus-client`'s encoder.
//!
//! A [`ManualReader`] on the meter provider is collected at each scrape (cumulative values,
//! as Prometheus wants them); each metric of the [set](super::set) is written under its
//! Prometheus name with its labels in the set's order. A metric with no sample yet still
//! shows its `# HELP` and `# TYPE` lines.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, Metric, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{InstrumentKind, ManualReader, Pipeline, Temporality};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

use super::set::{ALL, Def, Shape};

/// The reader `/metrics` collects through, shared between the meter provider (which owns its
/// readers) and [`Scrape`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Pull(Arc<ManualReader>);

impl MetricReader for Pull {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline);
    }

    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(rm)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

/// The `prometheus-client` collector that writes what [`Pull`] collects.
#[derive(Debug)]
pub(crate) struct Scrape(pub(crate) Pull);

/// A sample's labels: the set's labels in order, then any other attribute the SDK added
/// (`otel.metric.overflow` past the cardinality limit), its name made a Prometheus one.
fn labels<'a>(def: &Def, attributes: impl Iterator<Item = &'a KeyValue>) -> Vec<(String, String)> {
    let mut known: Vec<Option<String>> = vec![None; def.labels.len()];
    let mut extra = Vec::new();
    for kv in attributes {
        let key = kv.key.as_str();
        match def.labels.iter().position(|label| *label == key) {
            Some(i) => known[i] = Some(kv.value.as_str().into_owned()),
            None => extra.push((key.replace(['.', '-'], "_"), kv.value.as_str().into_owned())),
        }
    }
    let mut out: Vec<(String, String)> = def
        .labels
        .iter()
        .zip(known)
        .filter_map(|(label, value)| value.map(|v| ((*label).to_owned(), v)))
        .collect();
    out.extend(extra);
    out
}

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut collected = ResourceMetrics::default();
        if let Err(e) = self.0.collect(&mut collected) {
            tracing::warn!("the metrics could not be collected: {e}");
            return Ok(());
        }
        let by_name: HashMap<&str, &Metric> = collected
            .scope_metrics()
            .flat_map(|scope| scope.metrics())
            .map(|metric| (metric.name(), metric))
            .collect();
        for def in ALL {
            let name = def.prometheus_name();
            let kind = match def.shape {
                Shape::Counter => MetricType::Counter,
                Shape::UpDown | Shape::Gauge => MetricType::Gauge,
                Shape::Histogram => MetricType::Histogram,
            };
            let mut family = encoder.encode_descriptor(&name, def.help, None, kind)?;
            let Some(metric) = by_name.get(def.name) else {
                continue;
            };
            match metric.data() {
                AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                    for point in sum.data_points() {
                        let labels = labels(def, point.attributes());
                        family
                            .encode_family(&labels)?
                            .encode_counter::<NoLabelSet, _, u64>(&point.value(), None)?;
                    }
                }
                AggregatedMetrics::I64(MetricData::Sum(sum)) => {
                    for point in sum.data_points() {
                        let labels = labels(def, point.attributes());
                        family
                            .encode_family(&labels)?
                            .encode_gauge(&point.value())?;
                    }
                }
                AggregatedMetrics::I64(MetricData::Gauge(gauge)) => {
                    for point in gauge.data_points() {
                        let labels = labels(def, point.attributes());
                        family
                            .encode_family(&labels)?
                            .encode_gauge(&point.value())?;
                    }
                }
                AggregatedMetrics::F64(MetricData::Histogram(histogram)) => {
                    for point in histogram.data_points() {
                        let labels = labels(def, point.attributes());
                        // The SDK's counts are per bucket, one more than the bounds (the
                        // last is +Inf); the encoder adds them up.
                        let mut buckets: Vec<(f64, u64)> =
                            point.bounds().zip(point.bucket_counts()).collect();
                        buckets.push((f64::INFINITY, point.bucket_counts().last().unwrap_or(0)));
                        family
                            .encode_family(&labels)?
                            .encode_histogram::<NoLabelSet>(
                                point.sum(),
                                point.count(),
                                &buckets,
                                None,
                            )?;
                    }
                }
                other => {
                    tracing::warn!(
                        "metric {} has data of an unexpected kind: {other:?}",
                        def.name
                    );
                }
            }
        }
        Ok(())
    }
}
