use super::*;

#[test]
fn words_are_quoted_for_systemd() {
    assert_eq!(quote("a b"), "\"a b\"");
    assert_eq!(quote("say \"hi\"\\n"), "\"say \\\"hi\\\"\\\\n\"");
    assert_eq!(quote("line1\nline2"), "\"line1\\nline2\"");
    assert_eq!(quote("100% $HOME"), "\"100%% $$HOME\"");
    assert_eq!(exec_line(&["-c".into(), "echo ok".into()]), "\"-c\" \"echo ok\"");
}

#[test]
fn a_line_break_in_a_label_is_refused() {
    assert!(no_line_break("the label", "k", "a\nb").is_err());
    assert!(no_line_break("the label", "k", "ab").is_ok());
}
