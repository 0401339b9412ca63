use super::markdown::md;
use super::*;

#[test]
fn markdown_cells_cannot_split_or_render_html() {
    assert_eq!(md("a|b"), "a\\|b");
    assert_eq!(md("<img src=x>"), "\\<img src=x\\>");
    assert_eq!(md("evil\u{1b}[31m\nrow"), "evil?\\[31m?row");
    assert_eq!(md("node_01"), "node\\_01");
}

#[test]
fn mentions_links_and_references_go_in_code_spans() {
    assert_eq!(md("@org/team"), "`@org/team`");
    assert_eq!(md("https://evil.example/x"), "`https://evil.example/x`");
    assert_eq!(md("WWW.evil.example"), "`WWW.evil.example`");
    assert_eq!(md("fixes #12"), "`fixes #12`");
    assert_eq!(md("a`@b|c"), "``a`@b\\|c``");
    assert_eq!(md("`@x"), "`` `@x ``");
}

#[test]
fn framework_fields_read_as_name_in_env() {
    assert_eq!(
        field_label("framework:/opt/a:b:torch"),
        "torch in /opt/a:b:"
    );
    assert_eq!(field_label("driver_cuda"), "driver CUDA");
}
