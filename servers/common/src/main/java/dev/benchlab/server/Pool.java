package dev.benchlab.server;

/**
 * The threads that run requests, as the running server reports them: the executor's class and its
 * maximum number of threads ({@code null} when it has none, as a virtual-thread executor).
 */
public record Pool(String className, Integer max) {
    public static final Pool UNKNOWN = new Pool(null, null);
}
