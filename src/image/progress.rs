//! What a build's progress lines say about it: how many steps ran and how many came from the
//! layer cache (`--> Using cache <id>`), for the summary after `ags image build`, and whether
//! a TLS certificate was refused (a TLS-intercepting proxy whose CA the image lacks).

/// Counters over the progress lines of one build.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BuildStats {
    /// Steps of the (last) stage, from `STEP n/m:`.
    pub steps: u32,
    /// Steps whose layer came from the cache.
    pub cached: u32,
    /// A step reported an untrusted TLS certificate chain.
    pub untrusted_tls: bool,
}

/// What npm, curl and git print when a certificate chain is not trusted.
const UNTRUSTED_TLS: &[&str] = &[
    "SELF_SIGNED_CERT_IN_CHAIN",
    "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
    "self-signed certificate in certificate chain",
    "unable to get local issuer certificate",
];

impl BuildStats {
    /// Account for one progress line.
    pub fn observe(&mut self, line: &str) {
        if let Some(total) = step_total(line) {
            self.steps = total;
        } else if line.starts_with("--> Using cache ") {
            self.cached += 1;
        } else if UNTRUSTED_TLS.iter().any(|m| line.contains(m)) {
            self.untrusted_tls = true;
        }
    }

    /// One-line summary: `18 steps, 17 from cache`.
    pub fn summary(&self) -> String {
        format!("{} steps, {} from cache", self.steps, self.cached)
    }
}

/// `m` of a `STEP n/m: …` line.
fn step_total(line: &str) -> Option<u32> {
    let rest = line.strip_prefix("STEP ")?;
    let (counter, _) = rest.split_once(':')?;
    counter.split_once('/')?.1.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_steps_and_cache_hits() {
        let mut s = BuildStats::default();
        for l in [
            "STEP 1/3: FROM localhost/ags-busybox:latest",
            "STEP 2/3: RUN echo hi > /x",
            "--> Using cache 009df3c1dd48",
            "--> 009df3c1dd4",
            "STEP 3/3: RUN echo STEP 9/9: no",
            "--> Using cache 1234",
            "COMMIT localhost/x",
        ] {
            s.observe(l);
        }
        assert_eq!(
            s,
            BuildStats {
                steps: 3,
                cached: 2,
                untrusted_tls: false
            }
        );
        s.observe("npm ERR! code SELF_SIGNED_CERT_IN_CHAIN");
        assert!(s.untrusted_tls);
        assert_eq!(s.summary(), "3 steps, 2 from cache");
        assert_eq!(step_total("STEP x/y: z"), None);
    }
}
