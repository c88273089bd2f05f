"""signoff's tests. A package only so that the shared kit imports as `tests.kit` (the test
folders themselves are not packages: pytest imports their modules by file)."""
