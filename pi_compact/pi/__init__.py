"""Pi's own rules, restated: token estimates, settings, the model catalogue, how entries become messages, the
projection of a branch into context, the compaction plan, where Pi keeps sessions and loads extensions."""
