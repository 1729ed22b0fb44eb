package dev.benchlab.server;

/** The small user object of the published JMeter comparison. */
public record User(long id, String uid, String name, int age, String school) {
}
