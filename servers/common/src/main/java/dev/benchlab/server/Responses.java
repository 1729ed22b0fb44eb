package dev.benchlab.server;

import java.lang.reflect.Method;

/** The bodies every server answers with, servlet or reactive, so a response differs only in its headers. */
public final class Responses {
    /**
     * 70 bytes: with Tomcat's headers (status line, Content-Type, Content-Length, Date) the whole
     * response is 184 bytes, the size of the published wrk run's responses.
     */
    public static final String HELLO = "Hello from benchlab: one fixed body, served alike by all three servers";

    /** What /sleep waits when no ms is given. */
    public static final long SLEEP_MS = 10;

    private Responses() {
    }

    public static User user() {
        return new User(1L, "5f2b6c1e-8d3a-4e7b-9c21-0a6d4f3b2e19", "benchlab", 20, "Spring Boot University");
    }

    /** The /reflect work of the published JMeter test: a reflective call, and its text printed. */
    public static String reflect(UserService service) throws ReflectiveOperationException {
        Method describe = UserService.class.getMethod("describe", User.class);
        String text = (String) describe.invoke(service, user());
        System.out.println(text);
        return text;
    }

    public static String slept(long ms) {
        return "slept " + ms + " ms";
    }

    public static byte[] echo(byte[] body) {
        return body == null ? new byte[0] : body;
    }
}
