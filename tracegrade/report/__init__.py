"""Reports of a scoring run: the versioned JSON document (also what the store keeps), JUnit
XML for any CI system, and the rich console report."""
