//! Tests of `PodmanError`: messages, body decoding, and the predicates that read Podman's
//! error texts, with the texts Podman 4.3.1 and 5.4.2 send.

use super::*;

#[test]
fn error_stays_small() {
    // Results of every stage carry it; clippy's result_large_err limit is 128 bytes.
    assert!(
        std::mem::size_of::<PodmanError>() < 128,
        "{}",
        std::mem::size_of::<PodmanError>()
    );
}

#[test]
fn decodes_podman_json_error() {
    let body = br#"{"cause":"no such container","message":"no container with name or ID \"x\" found: no such container","response":404}"#;
    let (msg, cause) = decode_error_body(body);
    assert_eq!(
        msg,
        r#"no container with name or ID "x" found: no such container"#
    );
    assert_eq!(cause.as_deref(), Some("no such container"));
}

#[test]
fn falls_back_to_raw_text() {
    let (msg, cause) = decode_error_body(b"  404 page not found\n");
    assert_eq!(msg, "404 page not found");
    assert_eq!(cause, None);
    let (msg, _) = decode_error_body(b"");
    assert_eq!(msg, "(empty response body)");
    let long = "x".repeat(2000);
    let (msg, _) = decode_error_body(long.as_bytes());
    assert_eq!(msg.chars().count(), MAX_RAW_MESSAGE + 1);
}

#[test]
fn json_without_message_is_raw() {
    let (msg, cause) = decode_error_body(br#"{"error":"boom"}"#);
    assert_eq!(msg, r#"{"error":"boom"}"#);
    assert_eq!(cause, None);
}

#[test]
fn api_error_helpers_and_message() {
    let e = PodmanError::Api {
        status: 404,
        message: "no such volume".into(),
        cause: Some("no such volume".into()),
        method: "DELETE".into(),
        path: "/v4.0.0/libpod/volumes/v".into(),
        endpoint: "unix:///run/podman/podman.sock".into(),
    };
    assert!(e.is_not_found());
    assert!(!e.is_conflict());
    assert_eq!(
        e.to_string(),
        "Podman at unix:///run/podman/podman.sock refused DELETE /v4.0.0/libpod/volumes/v (404): \
         no such volume"
    );
}

#[test]
fn no_service_lists_every_candidate() {
    let e = PodmanError::NoService {
        tried: vec![
            Tried {
                url: "unix:///a".into(),
                source: "XDG_RUNTIME_DIR".into(),
                reason: "missing".into(),
            },
            Tried {
                url: "unix:///b".into(),
                source: "system".into(),
                reason: "refused".into(),
            },
        ],
        hint: "start it".into(),
    };
    assert_eq!(
        e.to_string(),
        "no Podman API service answered; tried:\n  unix:///a (from XDG_RUNTIME_DIR): missing\n  \
         unix:///b (from system): refused\nstart it"
    );
}

/// An API error as the transport builds it from Podman's JSON error body.
fn api(status: u16, body: &str) -> PodmanError {
    let (message, cause) = decode_error_body(body.as_bytes());
    PodmanError::Api {
        status,
        message,
        cause,
        method: "POST".into(),
        path: "/v4.0.0/libpod/containers/create".into(),
        endpoint: "unix:///run/podman/podman.sock".into(),
    }
}

/// Errors that are not Podman's answers never match a text predicate.
fn other_errors() -> Vec<PodmanError> {
    vec![
        PodmanError::Build {
            tag: "t".into(),
            message: "image not known, is already in use, already exists, keep-id requires additional UIDs or GIDs, exec: \"x\": permission denied, setrlimit".into(),
            endpoint: "unix:///s".into(),
        },
        PodmanError::Encode {
            what: "no such container".into(),
            error: "cgroups in hybrid mode".into(),
        },
    ]
}

#[test]
fn missing_image_on_both_versions() {
    // 4.3.1 (observed on this host): 500.
    let v4 = api(
        500,
        r#"{"cause":"image not known","message":"localhost/ags-nosuch:latest: image not known","response":500}"#,
    );
    // 5.4.2 (docs/podman5.md): 404 and a longer message.
    let v5 = api(
        404,
        r#"{"cause":"image not known","message":"no such image: localhost/ags-nosuch:latest: image not known","response":404}"#,
    );
    assert!(v4.is_image_missing() && v5.is_image_missing());
    assert!(!v4.is_name_in_use() && !v5.is_keep_id_subuid_failure());
}

#[test]
fn name_in_use_on_both_versions() {
    // 4.3.1 (observed); 5.4.2's binary has the same format strings ("creating container
    // storage: %w", "the container name %q is already in use by %s. …: %w").
    let e = api(
        500,
        r#"{"cause":"that name is already in use","message":"creating container storage: the container name \"pe-cap-2\" is already in use by 695ae44272a5e928b3106f1d2ed1fb7445a330463f6829468f6ae8997baa3923. You have to remove that container to be able to reuse that name: that name is already in use","response":500}"#,
    );
    assert!(e.is_name_in_use());
    assert!(!e.is_image_missing() && !e.is_already_exists() && e.exec_failure().is_none());
}

#[test]
fn volume_already_exists() {
    // 4.3.1 (observed): 500 with the text; a 409 counts too.
    let v4 = api(
        500,
        r#"{"cause":"volume already exists","message":"volume with name pe-cap-vol already exists: volume already exists","response":500}"#,
    );
    let conflict = api(
        409,
        r#"{"cause":"volume already exists","message":"volume with name v already exists: volume already exists","response":409}"#,
    );
    assert!(v4.is_already_exists() && conflict.is_already_exists());
    assert!(
        !api(
            500,
            r#"{"cause":"x","message":"volume is being used","response":500}"#
        )
        .is_already_exists()
    );
}

#[test]
fn keep_id_subuid_failure_is_podman_4s() {
    // The format string of Debian 12's Podman 4.3.1 binary (the error it wraps is nil here, which
    // Go prints as `%!w(<nil>)`); Podman 5.4.2's binary no longer contains it.
    let e = api(
        500,
        r#"{"cause":"keep-id requires additional UIDs or GIDs defined in /etc/subuid and /etc/subgid to function correctly: %!w(<nil>)","message":"keep-id requires additional UIDs or GIDs defined in /etc/subuid and /etc/subgid to function correctly: %!w(<nil>)","response":500}"#,
    );
    assert!(e.is_keep_id_subuid_failure());
    // A rootful keep-id create on 4.3.1 (observed) is a different refusal, not worth a retry.
    let rootful = api(
        500,
        r#"{"cause":"keep-id is only supported in rootless mode","message":"keep-id is only supported in rootless mode","response":500}"#,
    );
    assert!(!rootful.is_keep_id_subuid_failure());
}

#[test]
fn exec_failures_from_runc() {
    // Start failures observed on 4.3.1 with runc 1.1.5 (docs/podman5.md: the same on 5.4.2).
    let not_on_path = api(
        500,
        r#"{"cause":"OCI runtime attempted to invoke a command that was not found","message":"runc: runc create failed: unable to start container process: exec: \"nosuchcmd\": executable file not found in $PATH: OCI runtime attempted to invoke a command that was not found","response":500}"#,
    );
    let no_file = api(
        500,
        r#"{"cause":"OCI runtime attempted to invoke a command that was not found","message":"runc: runc create failed: unable to start container process: exec: \"/nonexistent\": stat /nonexistent: no such file or directory: OCI runtime attempted to invoke a command that was not found","response":500}"#,
    );
    let denied = api(
        500,
        r#"{"cause":"OCI permission denied","message":"runc: runc create failed: unable to start container process: exec: \"/etc/passwd\": permission denied: OCI permission denied","response":500}"#,
    );
    let format = api(
        500,
        r#"{"cause":"exec format error","message":"runc: runc create failed: unable to start container process: exec: \"/g\": exec format error","response":500}"#,
    );
    assert_eq!(not_on_path.exec_failure(), Some(ExecFailure::NotFound));
    assert_eq!(no_file.exec_failure(), Some(ExecFailure::NotFound));
    assert_eq!(denied.exec_failure(), Some(ExecFailure::CannotInvoke));
    assert_eq!(format.exec_failure(), Some(ExecFailure::CannotInvoke));
    // A missing bind source at start is Podman's "not found" too, but not the command's fault
    // (REFERENCE: "statfs …: no such file or directory").
    let mount = api(
        500,
        r#"{"cause":"no such file or directory","message":"statfs /gone: no such file or directory","response":500}"#,
    );
    assert_eq!(mount.exec_failure(), None);
}

#[test]
fn missing_bind_source_names_the_path() {
    // 4.3.1 and 5.4.2 (observed): the create of a container whose bind source is missing.
    let missing = api(
        500,
        r#"{"cause":"no such file or directory","message":"statfs /srv/app: no such file or directory","response":500}"#,
    );
    assert_eq!(missing.missing_bind_source(), Some("/srv/app"));
    let other = api(
        500,
        r#"{"cause":"permission denied","message":"statfs /srv/app: permission denied","response":500}"#,
    );
    assert_eq!(other.missing_bind_source(), None);
    let image = api(
        500,
        r#"{"cause":"image not known","message":"localhost/x: image not known","response":500}"#,
    );
    assert_eq!(image.missing_bind_source(), None);
}

#[test]
fn state_improper_on_both_versions() {
    // 4.3.1 (observed): 500; 5.4.2: 409 and "in state stopped" just after exit (docs/podman5.md).
    let v4 = api(
        500,
        r#"{"cause":"container state improper","message":"can only kill running containers. 2f15ae41d034 is in state exited: container state improper","response":500}"#,
    );
    let v5 = api(
        409,
        r#"{"cause":"container state improper","message":"can only kill running containers. 2f15ae41d034 is in state stopped: container state improper","response":409}"#,
    );
    assert!(v4.is_state_improper() && v5.is_state_improper());
}

#[test]
fn vanished_container() {
    // 4.3.1 while a removal is under way; any 404.
    let removing = api(
        500,
        r#"{"cause":"no such container","message":"container 2f15ae41d034 does not exist in database: no such container","response":500}"#,
    );
    let gone = api(
        404,
        r#"{"cause":"no such container","message":"no container with ID or name \"x\" found: no such container","response":404}"#,
    );
    assert!(removing.is_vanished_container() && gone.is_vanished_container());
    assert!(!api(500, r#"{"cause":"x","message":"boom","response":500}"#).is_vanished_container());
}

#[test]
fn inspect_racing_the_exit() {
    // 4.3.1 inspecting a container whose process has just ended (seen in scripts/test-fresh).
    let race = api(
        500,
        r#"{"cause":"no such process","message":"read /proc/74129/cgroup: no such process","response":500}"#,
    );
    assert!(race.is_exit_race());
    assert!(
        !api(
            500,
            r#"{"cause":"no such process","message":"kill: no such process","response":500}"#
        )
        .is_exit_race()
    );
    assert!(
        !api(
            404,
            r#"{"cause":"no such container","message":"x","response":404}"#
        )
        .is_exit_race()
    );
}

#[test]
fn a_list_racing_a_removal() {
    // 4.3.1 listing volumes while a launch's staging volume was removed (seen in scripts/test).
    let volume = api(
        500,
        r#"{"cause":"no such volume","message":"no volume with name ags-stage-1 found in database: no such volume","response":500}"#,
    );
    assert!(volume.is_removal_race());
    assert!(!api(404, r#"{"cause":"no such volume","message":"x","response":404}"#).is_removal_race());
    assert!(!api(500, r#"{"cause":"x","message":"boom","response":500}"#).is_removal_race());
}

#[test]
fn runtime_setup_failures() {
    // REFERENCE.md §1: crun on this kernel, and Podman's default rlimits without CAP_SYS_RESOURCE.
    let crun = api(
        500,
        r#"{"cause":"OCI runtime error","message":"crun: cgroups in hybrid mode not supported, drop all controllers from cgroupv2: OCI runtime error","response":500}"#,
    );
    let rlimit = api(
        500,
        r#"{"cause":"OCI runtime error","message":"runc: runc create failed: unable to start container process: error during container init: error setting rlimits for ready process: error setting rlimit type 7: operation not permitted; setrlimit RLIMIT_NOFILE: Operation not permitted","response":500}"#,
    );
    let ids = api(
        500,
        r#"{"cause":"exit status 1","message":"cannot set up namespace using \"/usr/bin/newuidmap\": exit status 1","response":500}"#,
    );
    assert_eq!(
        crun.runtime_setup_failure(),
        Some(RuntimeSetupFailure::HybridCgroups)
    );
    assert_eq!(rlimit.runtime_setup_failure(), Some(RuntimeSetupFailure::Rlimits));
    assert_eq!(
        ids.runtime_setup_failure(),
        Some(RuntimeSetupFailure::SubordinateIds)
    );
    assert_eq!(api(500, r#"{"message":"boom"}"#).runtime_setup_failure(), None);
}

#[test]
fn text_predicates_read_only_podmans_answers() {
    for e in other_errors() {
        assert!(
            !e.is_image_missing() && !e.is_name_in_use() && !e.is_already_exists(),
            "{e}"
        );
        assert!(
            !e.is_keep_id_subuid_failure() && !e.is_vanished_container(),
            "{e}"
        );
        assert_eq!(e.exec_failure(), None, "{e}");
        assert_eq!(e.runtime_setup_failure(), None, "{e}");
    }
}

#[test]
fn a_lost_monitor_is_recognised_in_both_wordings() {
    // Observed on 4.3.1 with a conmon that exits before writing its status (init and attach),
    // the same text as Podman 5.4.2's flake; and with one that exits at once.
    let init = api(
        500,
        r#"{"cause":"readObjectStart: expect { or n, but found \u0000, error found in #0 byte of ...||..., bigger context ...||...","message":"container create failed (no logs from conmon): conmon bytes \"\": readObjectStart: expect { or n, but found \u0000, error found in #0 byte of ...||..., bigger context ...||...","response":500}"#,
    );
    let attach = api(
        409,
        r#"{"cause":"x","message":"preparing container 41de for attach: container create failed (no logs from conmon): conmon bytes \"\": readObjectStart: expect { or n, but found  , error found in #0 byte of ...||..., bigger context ...||...","response":409}"#,
    );
    let early = api(
        500,
        r#"{"cause":"broken pipe","message":"write child: broken pipe","response":500}"#,
    );
    assert!(init.is_conmon_lost() && attach.is_conmon_lost() && early.is_conmon_lost());
    let runc = api(
        500,
        r#"{"cause":"OCI runtime error","message":"runc: runc create failed: unable to start container process: waiting for init preliminary setup: read init-p: connection reset by peer: OCI runtime error","response":500}"#,
    );
    assert!(runc.is_conmon_lost());
    let other = api(
        500,
        r#"{"cause":"exit status 1","message":"exit status 1","response":500}"#,
    );
    assert!(!other.is_conmon_lost());
}
