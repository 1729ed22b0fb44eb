package dev.benchlab.server;

import java.lang.reflect.Field;
import java.lang.reflect.Method;

/**
 * Names the embedded server and its exact version. Reflection keeps the one source free of any
 * compile-time dependency on a particular server.
 */
final class ServerVersion {
    private ServerVersion() {
    }

    static String[] detect() {
        String tomcat = call("org.apache.catalina.util.ServerInfo", "getServerInfo");
        if (tomcat != null && tomcat.contains("/")) {
            tomcat = tomcat.substring(tomcat.indexOf('/') + 1);
        }
        if (tomcat != null) {
            return new String[] {"tomcat", tomcat};
        }
        String jetty = field("org.eclipse.jetty.util.Jetty", "VERSION");
        if (jetty != null) {
            return new String[] {"jetty", jetty};
        }
        String undertow = call("io.undertow.Version", "getVersionString");
        if (undertow != null) {
            return new String[] {"undertow", undertow};
        }
        return new String[] {"unknown", "unknown"};
    }

    private static String call(String className, String method) {
        try {
            Method m = Class.forName(className).getMethod(method);
            return String.valueOf(m.invoke(null));
        } catch (ReflectiveOperationException | LinkageError e) {
            return null;
        }
    }

    private static String field(String className, String name) {
        try {
            Field f = Class.forName(className).getField(name);
            return String.valueOf(f.get(null));
        } catch (ReflectiveOperationException | LinkageError e) {
            return null;
        }
    }
}
