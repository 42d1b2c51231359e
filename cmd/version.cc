// Placeholder until flags.cc lands.
