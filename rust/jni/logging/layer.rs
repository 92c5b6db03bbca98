//! The `tracing` layer that hands the engine's events to a [`Sink`] (slf4j, through
//! [`super::java::JavaLog`]): one logger per Rust module (`org.forstrs.native.<module path>`), the
//! label of the database the event happened for in front of the message, repeats rate-limited.
//! Levels the sink has off are off at the callsites too (`max_level_hint`, callsite interest), so
//! a disabled event costs one atomic load and never crosses into Java.

use std::cell::Cell;
use std::fmt::{self, Write as _};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use tracing::callsite::Identifier;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use super::label::{SPAN_FIELD, prefixed};
use super::rate_limit::{Clock, RateLimiter, Verdict};

/// Prefix of every logger that receives native events.
pub const LOGGER_PREFIX: &str = "org.forstrs.native";

/// Where log lines go: `level` as [`level_code`] gives it. Returns false if the line was lost.
pub trait Sink: Send + Sync + 'static {
    fn log(&self, level: i32, logger: &str, message: &str) -> bool;
}

/// The level codes shared with `org.forstrs.jni.NativeLog`: 0 is off, then ERROR (1) up to TRACE
/// (5); a maximum level lets through every level whose code is not above it.
pub fn level_code(level: &Level) -> i32 {
    match *level {
        Level::ERROR => 1,
        Level::WARN => 2,
        Level::INFO => 3,
        Level::DEBUG => 4,
        Level::TRACE => 5,
    }
}

/// The most verbose level that is logged, as a [`level_code`] (0: nothing).
#[derive(Debug, Default)]
pub struct MaxLevel(AtomicU8);

impl MaxLevel {
    pub fn set(&self, code: i32) {
        self.0.store(code.clamp(0, 5) as u8, Ordering::Relaxed);
    }

    pub fn allows(&self, level: &Level) -> bool {
        level_code(level) <= i32::from(self.0.load(Ordering::Relaxed))
    }

    fn filter(&self) -> tracing::level_filters::LevelFilter {
        use tracing::level_filters::LevelFilter;
        match self.0.load(Ordering::Relaxed) {
            0 => LevelFilter::OFF,
            1 => LevelFilter::ERROR,
            2 => LevelFilter::WARN,
            3 => LevelFilter::INFO,
            4 => LevelFilter::DEBUG,
            _ => LevelFilter::TRACE,
        }
    }
}

/// The logger of events from the Rust module `target`: this crate's modules by their path
/// (`forst::storage::retrying` → `org.forstrs.native.storage.retrying`), other crates' under their
/// own name (`object_store::client::retry` → `org.forstrs.native.object_store.client.retry`).
pub fn logger_name(target: &str) -> String {
    let path =
        target.strip_prefix("forst").filter(|rest| rest.is_empty() || rest.starts_with("::"));
    let path = path.map_or(target, |rest| rest.trim_start_matches("::"));
    if path.is_empty() {
        LOGGER_PREFIX.to_string()
    } else {
        format!("{LOGGER_PREFIX}.{}", path.replace("::", "."))
    }
}

/// What a span's extensions hold when it names a database.
struct SpanLabel(Arc<str>);

/// A kind of event for rate limiting: where it is emitted and for which database.
type EventKind = (Identifier, Option<Arc<str>>);

thread_local! {
    /// Set while this thread forwards an event: an event raised meanwhile (by the sink itself) is
    /// dropped instead of recursing.
    static FORWARDING: Cell<bool> = const { Cell::new(false) };
}

pub struct ForwardingLayer<K: Sink, C: Clock> {
    sink: K,
    max_level: Arc<MaxLevel>,
    limiter: RateLimiter<EventKind, C>,
}

impl<K: Sink, C: Clock> ForwardingLayer<K, C> {
    pub fn new(sink: K, max_level: Arc<MaxLevel>, limiter: RateLimiter<EventKind, C>) -> Self {
        ForwardingLayer { sink, max_level, limiter }
    }

    fn forward<S>(&self, event: &Event<'_>, ctx: &Context<'_, S>)
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let metadata = event.metadata();
        let label = ctx.event_scope(event).and_then(|scope| {
            scope
                .into_iter()
                .find_map(|span| span.extensions().get::<SpanLabel>().map(|l| l.0.clone()))
        });
        let suppressed = match self.limiter.check((metadata.callsite(), label.clone())) {
            Verdict::Drop => return,
            Verdict::Log { suppressed } => suppressed,
        };
        let level = level_code(metadata.level());
        let logger = logger_name(metadata.target());
        if suppressed > 0 {
            let note = format!(
                "{suppressed} more events like the next one were dropped (at most {} per {} s)",
                self.limiter.limit(),
                self.limiter.interval().as_secs()
            );
            self.sink.log(level, &logger, &prefixed(label.as_deref(), &note));
        }
        let mut message = MessageText::default();
        event.record(&mut message);
        self.sink.log(level, &logger, &prefixed(label.as_deref(), &message.0));
    }
}

impl<S, K, C> Layer<S> for ForwardingLayer<K, C>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    K: Sink,
    C: Clock + 'static,
{
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        // Asked again after every level change (`rebuild_interest_cache`).
        if self.max_level.allows(metadata.level()) { Interest::always() } else { Interest::never() }
    }

    fn enabled(&self, metadata: &Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        self.max_level.allows(metadata.level())
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(self.max_level.filter())
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut label = LabelField::default();
        attrs.record(&mut label);
        if let (Some(text), Some(span)) = (label.0, ctx.span(id)) {
            span.extensions_mut().insert(SpanLabel(text.into()));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        if FORWARDING.with(|f| f.replace(true)) {
            return;
        }
        // Logging must never take the engine down: a panic here loses the event, nothing else.
        let _ = catch_unwind(AssertUnwindSafe(|| self.forward(event, &ctx)));
        FORWARDING.with(|f| f.set(false));
    }
}

/// An event's text: its message, then its other fields as ` name=value`.
#[derive(Default)]
struct MessageText(String);

impl Visit for MessageText {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.insert_str(0, value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.0.insert_str(0, &format!("{value:?}"));
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

/// The database label of a span, if it has one.
#[derive(Default)]
struct LabelField(Option<String>);

impl Visit for LabelField {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == SPAN_FIELD {
            self.0 = Some(value.to_string());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == SPAN_FIELD {
            self.0 = Some(format!("{value:?}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use tracing_subscriber::Registry;
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;
    use crate::jni::logging::label::DbLabel;
    use crate::jni::logging::rate_limit::ManualClock;

    /// The lines logged, as (level code, logger, message).
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<(i32, String, String)>>>);

    impl Sink for Lines {
        fn log(&self, level: i32, logger: &str, message: &str) -> bool {
            self.0.lock().unwrap().push((level, logger.into(), message.into()));
            true
        }
    }

    impl Lines {
        fn take(&self) -> Vec<(i32, String, String)> {
            std::mem::take(&mut self.0.lock().unwrap())
        }
    }

    const MINUTE: Duration = Duration::from_secs(60);

    /// Runs `body` under the layer (time passes only when `body` advances the clock) and returns
    /// the lines it logged.
    fn with_layer(
        max_level: i32,
        limit: u32,
        body: impl FnOnce(&ManualClock),
    ) -> Vec<(i32, String, String)> {
        let lines = Lines::default();
        let level = Arc::new(MaxLevel::default());
        level.set(max_level);
        let clock = ManualClock::new();
        let layer = ForwardingLayer::new(
            lines.clone(),
            level,
            RateLimiter::new(limit, MINUTE, clock.clone()),
        );
        tracing::subscriber::with_default(Registry::default().with(layer), || body(&clock));
        lines.take()
    }

    fn db_label(subtask: &str) -> DbLabel {
        let mut label = DbLabel::default();
        for (key, value) in [
            ("log.job", "j1"),
            ("log.operator", "op1"),
            ("log.subtask", subtask),
            ("log.attempt", "0"),
        ] {
            label.set(key, value).unwrap();
        }
        label
    }

    #[test]
    fn events_in_a_database_span_carry_its_label() {
        let lines = with_layer(3, 10, |_| {
            let _in_db = db_label("1").span().entered();
            tracing::warn!("retrying read of {} (1/4): {}", "f.sst", "timed out");
        });
        assert_eq!(
            lines,
            [(
                2,
                format!("{LOGGER_PREFIX}.jni.logging.layer.tests"),
                "[job=j1, op=op1, subtask=1, attempt=0] retrying read of f.sst (1/4): timed out"
                    .to_string()
            )]
        );
    }

    #[test]
    fn events_outside_any_database_have_no_label_and_fields_follow_the_message() {
        let lines = with_layer(3, 10, |_| tracing::info!(files = 3, "deleted orphans"));
        assert_eq!(lines[0].2, "deleted orphans files=3");
    }

    #[test]
    fn levels_above_the_maximum_are_not_forwarded() {
        let lines = with_layer(2, 10, |_| {
            tracing::error!("e");
            tracing::warn!("w");
            tracing::info!("i");
            tracing::debug!("d");
        });
        let levels: Vec<i32> = lines.iter().map(|l| l.0).collect();
        assert_eq!(levels, [1, 2]);
        assert!(with_layer(0, 10, |_| tracing::error!("e")).is_empty());
    }

    #[test]
    fn a_raised_level_reaches_callsites_already_seen() {
        fn detail() {
            tracing::debug!("detail");
        }
        let lines = Lines::default();
        let level = Arc::new(MaxLevel::default());
        level.set(2);
        let limiter = RateLimiter::new(10, MINUTE, ManualClock::new());
        let layer = ForwardingLayer::new(lines.clone(), level.clone(), limiter);
        tracing::subscriber::with_default(Registry::default().with(layer), || {
            detail();
            // What `NativeLog.refreshLevel` does (through `set_max_level`).
            level.set(4);
            tracing::callsite::rebuild_interest_cache();
            detail();
        });
        assert_eq!(lines.take().len(), 1);
    }

    #[test]
    fn repeats_are_limited_per_callsite_and_database() {
        // One callsite.
        fn cannot_delete(file: u32) {
            tracing::warn!("cannot delete f{file}");
        }
        let lines = with_layer(3, 2, |clock| {
            for subtask in ["1", "2"] {
                let _in_db = db_label(subtask).span().entered();
                (0..5).for_each(cannot_delete);
            }
            clock.advance(MINUTE);
            let _in_db = db_label("1").span().entered();
            cannot_delete(9);
        });
        let messages: Vec<&str> = lines.iter().map(|l| l.2.as_str()).collect();
        assert_eq!(
            messages,
            [
                "[job=j1, op=op1, subtask=1, attempt=0] cannot delete f0",
                "[job=j1, op=op1, subtask=1, attempt=0] cannot delete f1",
                "[job=j1, op=op1, subtask=2, attempt=0] cannot delete f0",
                "[job=j1, op=op1, subtask=2, attempt=0] cannot delete f1",
                "[job=j1, op=op1, subtask=1, attempt=0] 3 more events like the next one were \
                 dropped (at most 2 per 60 s)",
                "[job=j1, op=op1, subtask=1, attempt=0] cannot delete f9",
            ]
        );
    }

    #[test]
    fn loggers_are_named_after_the_module() {
        assert_eq!(logger_name("forst::storage::retrying"), "org.forstrs.native.storage.retrying");
        assert_eq!(logger_name("forst"), "org.forstrs.native");
        assert_eq!(logger_name("forstx::a"), "org.forstrs.native.forstx.a");
        assert_eq!(
            logger_name("object_store::client::retry"),
            "org.forstrs.native.object_store.client.retry"
        );
    }
}
