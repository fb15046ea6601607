//! Image builds: `POST /libpod/build` with a context tar, its streamed JSON progress, and
//! `GET /libpod/images/NAME/json` for the image's ID and labels (what `ags image build` compares
//! to skip an unchanged build).
//!
//! Part of stage 4 (`podman`). The response is a sequence of JSON objects
//! (`{"stream": "STEP 1/2: ..."}`, finally `{"error": "..."}` on failure) that arrives while the
//! build runs; [`BuildProgress`] parses it incrementally so each line reaches the caller at once.
//!
//! Observed on 4.3.1: the layer cache is used only with `layers=true` **and**
//! `outputformat=application/vnd.oci.image.manifest.v1+json`; with either missing, a second
//! identical build runs every step again. A cache hit shows as `--> Using cache <id>`. Without
//! `forcerm=true` a failed step leaves its buildah working container behind (visible only to
//! `podman ps --external`).
//! Ref: <https://docs.podman.io/en/latest/_static/api.html#tag/images/operation/ImageBuildLibpod>

use std::collections::BTreeMap;

use bytes::Bytes;
use http::Method;
use serde::Deserialize;

use super::error::{Excerpt, PodmanError, Result};
use super::transport::{Client, Request, image_ref};

/// The OCI manifest type; needed for the build cache.
const OCI_FORMAT: &str = "application/vnd.oci.image.manifest.v1+json";

/// Options of [`Client::image_build`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildOptions {
    /// The tag of the result (`localhost/ags-agent:latest`).
    pub tag: String,
    /// Path of the Containerfile inside the context tar.
    pub containerfile: String,
    /// `ARG` values. Sent in the query string, never shown in errors.
    pub build_args: BTreeMap<String, String>,
    /// Ignore the layer cache.
    pub no_cache: bool,
    /// Labels set on the result (`io.ags.image.recipe`).
    pub labels: BTreeMap<String, String>,
}

impl BuildOptions {
    /// Build `Containerfile` from the context root as `tag`, with the cache.
    pub fn new(tag: impl Into<String>) -> Self {
        BuildOptions {
            tag: tag.into(),
            containerfile: "Containerfile".to_owned(),
            build_args: BTreeMap::new(),
            no_cache: false,
            labels: BTreeMap::new(),
        }
    }
}

/// What a successful build produced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BuildOutcome {
    /// The image ID, when the stream named it.
    pub image_id: Option<String>,
}

/// An image's ID and labels, as `GET /libpod/images/NAME/json` reports them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ImageSummary {
    /// The full image ID.
    pub id: String,
    /// The image's labels (Podman sends `null` for none).
    #[serde(default, deserialize_with = "super::models::null_as_default")]
    pub labels: BTreeMap<String, String>,
}

/// One object of the build stream.
#[derive(Debug, Deserialize)]
struct BuildMessage {
    #[serde(default)]
    stream: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    aux: Option<BuildAux>,
}

#[derive(Debug, Deserialize)]
struct BuildAux {
    #[serde(rename = "ID", default)]
    id: Option<String>,
}

/// An event parsed from the build stream.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Line(String),
    Error(String),
    ImageId(String),
}

/// Incremental parser of the build stream: feed chunks, get events for every complete object.
#[derive(Debug, Default)]
struct BuildProgress {
    buf: Vec<u8>,
}

impl BuildProgress {
    /// Parse what `chunk` completes; an incomplete object waits for the next chunk.
    fn push(&mut self, chunk: &[u8]) -> std::result::Result<Vec<Event>, (String, String)> {
        self.buf.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut iter = serde_json::Deserializer::from_slice(&self.buf).into_iter::<BuildMessage>();
        loop {
            match iter.next() {
                None => break,
                Some(Ok(msg)) => events.extend(events_of(msg)),
                Some(Err(e)) if e.is_eof() => break,
                Some(Err(e)) => return Err((e.to_string(), Excerpt(&self.buf).to_string())),
            }
        }
        let used = iter.byte_offset();
        self.buf.drain(..used);
        Ok(events)
    }

    /// Bytes left over at the end of the stream (an incomplete object).
    fn rest(&self) -> &[u8] {
        self.buf.trim_ascii()
    }
}

fn events_of(msg: BuildMessage) -> Vec<Event> {
    let mut out = Vec::new();
    if let Some(text) = msg.stream {
        for line in text.strip_suffix('\n').unwrap_or(&text).split('\n') {
            if is_image_id(line) {
                out.push(Event::ImageId(line.to_owned()));
            }
            out.push(Event::Line(line.to_owned()));
        }
    }
    if let Some(id) = msg.aux.and_then(|a| a.id) {
        out.push(Event::ImageId(id.trim_start_matches("sha256:").to_owned()));
    }
    if let Some(err) = msg.error {
        out.push(Event::Error(err.trim_end().to_owned()));
    }
    out
}

fn is_image_id(line: &str) -> bool {
    line.len() == 64 && line.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Client {
    /// Build an image from `context_tar`, calling `on_progress` with every output line as it
    /// arrives. Fails with [`PodmanError::Build`] when the stream reports an error.
    pub async fn image_build(
        &self,
        context_tar: Bytes,
        opts: &BuildOptions,
        mut on_progress: impl FnMut(&str),
    ) -> Result<BuildOutcome> {
        let mut req = Request::new(Method::POST, "/build")
            .query("t", &opts.tag)
            .query("dockerfile", &opts.containerfile)
            .query("layers", "true")
            .query("outputformat", OCI_FORMAT)
            .query("forcerm", "true");
        if opts.no_cache {
            req = req.query("nocache", "true");
        }
        if !opts.build_args.is_empty() {
            req = req.query_json("buildargs", &opts.build_args)?;
        }
        if !opts.labels.is_empty() {
            req = req.query_json("labels", &opts.labels)?;
        }
        let mut body = self.stream(req.tar(context_tar)).await?;
        let mut progress = BuildProgress::default();
        let mut outcome = BuildOutcome::default();
        while let Some(chunk) = body.next_chunk().await? {
            let events = progress
                .push(&chunk)
                .map_err(|(e, x)| self.build_decode_error(e, x))?;
            for event in events {
                match event {
                    Event::Line(line) => on_progress(&line),
                    Event::ImageId(id) => outcome.image_id = Some(id),
                    Event::Error(message) => {
                        return Err(PodmanError::Build {
                            tag: opts.tag.clone(),
                            message,
                            endpoint: self.shared_url(),
                        });
                    }
                }
            }
        }
        if !progress.rest().is_empty() {
            let excerpt = Excerpt(progress.rest()).to_string();
            return Err(self.build_decode_error("the stream ended inside an object".into(), excerpt));
        }
        Ok(outcome)
    }

    /// The ID and labels of image `name`; `None` when the service does not have it (404).
    pub async fn image_summary(&self, name: &str) -> Result<Option<ImageSummary>> {
        let req = Request::new(Method::GET, format!("/images/{}/json", image_ref(name)));
        match self.call_json(req, "image inspect").await {
            Ok(summary) => Ok(Some(summary)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn build_decode_error(&self, error: String, excerpt: String) -> PodmanError {
        PodmanError::Decode {
            what: "build progress stream".into(),
            error,
            excerpt,
            endpoint: self.shared_url(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = concat!(
        r#"{"stream":"STEP 1/2: FROM localhost/ags-busybox:latest\n"}"#,
        "\n",
        r#"{"stream":"STEP 2/2: RUN echo hi \u003e /x\n"}"#,
        "\n",
        r#"{"stream":"--\u003e Using cache 009df3c1dd480668396051a99b9516d0f7a0e6bac5e44b6dc29ff2cfe57bffd1\n"}"#,
        "\n",
        r#"{"stream":"009df3c1dd480668396051a99b9516d0f7a0e6bac5e44b6dc29ff2cfe57bffd1\n"}"#,
        "\n"
    );

    fn lines(events: &[Event]) -> Vec<&str> {
        events
            .iter()
            .filter_map(|e| {
                if let Event::Line(l) = e {
                    Some(l.as_str())
                } else {
                    None
                }
            })
            .collect()
    }

    #[test]
    fn parses_whole_stream() {
        let mut p = BuildProgress::default();
        let events = p.push(STREAM.as_bytes()).unwrap();
        assert_eq!(
            lines(&events)[..2],
            [
                "STEP 1/2: FROM localhost/ags-busybox:latest",
                "STEP 2/2: RUN echo hi > /x"
            ]
        );
        let id = "009df3c1dd480668396051a99b9516d0f7a0e6bac5e44b6dc29ff2cfe57bffd1";
        assert_eq!(events.last(), Some(&Event::Line(id.into())));
        assert!(events.contains(&Event::ImageId(id.into())));
        assert!(p.rest().is_empty());
    }

    #[test]
    fn same_events_at_every_split() {
        let whole = BuildProgress::default().push(STREAM.as_bytes()).unwrap();
        for cut in 0..STREAM.len() {
            let mut p = BuildProgress::default();
            let mut events = p.push(&STREAM.as_bytes()[..cut]).unwrap();
            events.extend(p.push(&STREAM.as_bytes()[cut..]).unwrap());
            assert_eq!(events, whole, "split at {cut}");
            assert!(p.rest().is_empty());
        }
    }

    #[test]
    fn error_object_becomes_an_error_event() {
        let s = br#"{"stream":"STEP 2/2: RUN exit 3\n"}
{"errorDetail":{"message":"x"},"error":"building at STEP \"RUN exit 3\": while running runtime: exit status 3\n"}
"#;
        let events = BuildProgress::default().push(s).unwrap();
        assert_eq!(
            events.last(),
            Some(&Event::Error(
                r#"building at STEP "RUN exit 3": while running runtime: exit status 3"#.into()
            ))
        );
    }

    #[test]
    fn multi_line_stream_text_is_split() {
        let events = BuildProgress::default()
            .push(br#"{"stream":"a\nb\n"}{"aux":{"ID":"sha256:ab"}}"#)
            .unwrap();
        assert_eq!(
            events,
            [
                Event::Line("a".into()),
                Event::Line("b".into()),
                Event::ImageId("ab".into())
            ]
        );
    }

    #[test]
    fn garbage_is_a_decode_error() {
        let (error, excerpt) = BuildProgress::default().push(b"<html>").unwrap_err();
        assert!(error.contains("line 1 column 1"), "{error}");
        assert_eq!(excerpt, "\"<html>\"");
    }

    #[test]
    fn incomplete_tail_is_kept() {
        let mut p = BuildProgress::default();
        assert!(p.push(br#"{"stream":"a"#).unwrap().is_empty());
        assert_eq!(p.rest(), br#"{"stream":"a"#);
    }
}
